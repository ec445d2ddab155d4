// Stamps the build commit into the binary for `iotoll --version`,
// `iotoll sysinfo` and stored runs; absent from the disclosure (not
// guessed) when the source is not a git checkout.
fn main() {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]);
    let version = env!("CARGO_PKG_VERSION");
    match &commit {
        Some(c) => {
            println!("cargo:rustc-env=IOTOLL_BUILD_COMMIT={c}");
            println!("cargo:rustc-env=IOTOLL_LONG_VERSION={version} (commit {c})");
        }
        None => println!(
            "cargo:rustc-env=IOTOLL_LONG_VERSION={version} (commit unknown: not built from a git checkout)"
        ),
    }
    // A new commit changes HEAD (a branch switch) or the branch's ref; in a
    // worktree both live under its own git directory.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/refs/heads");
        if let Some(common) = git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]) {
            println!("cargo:rerun-if-changed={common}/refs/heads");
            println!("cargo:rerun-if-changed={common}/packed-refs");
        }
    }
}
