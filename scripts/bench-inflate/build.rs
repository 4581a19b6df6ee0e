// isal-rs's `use-system-isal` feature expects the library to be linked by the user: Debian's libisal-dev.
fn main() {
    println!("cargo:rustc-link-lib=isal");
}
