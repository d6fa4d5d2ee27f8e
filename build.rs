//! Rebuilds when an embedded folder changes: `include_dir!` (the catalogue) cannot tell
//! cargo about files added to a folder, so the folders are watched here.

fn main() {
    println!("cargo:rerun-if-changed=catalogue");
    println!("cargo:rerun-if-changed=resources");
    println!("cargo:rerun-if-changed=prompts");
}
