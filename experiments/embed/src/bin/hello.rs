//! The baseline for binary size: a hello-world built with the same profile.
fn main() {
    println!("hello");
}
