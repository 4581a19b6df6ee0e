// Embeds the git commit in the binary so every manifest says which code wrote it.
fn main() {
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs/heads");
    println!("cargo:rerun-if-env-changed=SWORD_GIT_COMMIT");
    let commit = std::env::var("SWORD_GIT_COMMIT").ok().or_else(|| {
        std::process::Command::new("git")
            .args(["rev-parse", "--short=12", "HEAD"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    });
    if let Some(c) = commit {
        println!("cargo:rustc-env=SWORD_GIT_COMMIT={c}");
    }
}
