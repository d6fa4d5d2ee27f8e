//! Rebuild when the embedded catalogue changes (include_dir cannot see new files).
fn main() {
    println!("cargo:rerun-if-changed=catalogue");
    println!("cargo:rerun-if-changed=resources");
    println!("cargo:rerun-if-changed=prompts");
}
