//! Rebuilds when the embedded folders change (include_dir cannot see new files), and lays
//! out optimised Linux builds so an idle server touches few pages of its binary: the
//! functions start-up runs placed together (`link/startup-order.ld`), relative relocations
//! packed. Measured (README, Scale: idle memory): 21 MB → 13 MB RSS on the embedded catalogue.

use std::env;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=catalogue");
    println!("cargo:rerun-if-changed=resources");
    println!("cargo:rerun-if-changed=prompts");
    println!("cargo:rerun-if-changed=link/startup-order.ld");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    if !layout_applies() {
        return;
    }
    let order = Path::new(&var("CARGO_MANIFEST_DIR")).join("link/startup-order.ld");
    if order.is_file() {
        println!("cargo:rustc-link-arg-bin=toolgate=-Wl,-T,{}", order.display());
    }
    if relr_supported() {
        println!("cargo:rustc-link-arg-bin=toolgate=-Wl,-z,pack-relative-relocs");
    }
}

/// The layout is for a release-like x86_64 Linux build linked by rustc's own lld with this
/// repository's flags: the order script names v0 symbols (`.cargo/config.toml`); GNU ld
/// reads the script too but matched its 2,500 patterns for over 10 minutes (lld: 2 s);
/// a linker a user configured (mold, for one) may not read scripts at all. Anything else
/// builds exactly as cargo would without this script.
fn layout_applies() -> bool {
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    let flags: Vec<&str> = flags.split('\x1f').collect();
    let v0 = flags.windows(2).any(|w| w == ["-C", "symbol-mangling-version=v0"])
        || flags.contains(&"-Csymbol-mangling-version=v0");
    let own_linker = env::var_os("RUSTC_LINKER").is_some()
        || flags.iter().any(|f| {
            ["linker", "fuse-ld", "link-self-contained"]
                .iter()
                .any(|k| f.contains(k))
        });
    var("PROFILE") == "release" && v0 && !own_linker && links_with_rust_lld()
}

/// rustc links x86_64-unknown-linux-gnu with its own lld by default since 1.90; before
/// that, and on other targets, with the system's `cc` and whatever `ld` it finds.
fn links_with_rust_lld() -> bool {
    if var("TARGET") != "x86_64-unknown-linux-gnu" {
        return false;
    }
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let Ok(out) = std::process::Command::new(rustc).arg("-V").output() else {
        return false;
    };
    // "rustc 1.95.0 (59807616e 2026-...)"
    let version = String::from_utf8_lossy(&out.stdout);
    let mut numbers = version.split_whitespace().nth(1).unwrap_or("").split('.');
    let major: u32 = numbers.next().and_then(|n| n.parse().ok()).unwrap_or(0);
    let minor: u32 = numbers.next().and_then(|n| n.parse().ok()).unwrap_or(0);
    (major, minor) >= (1, 90)
}

/// Packed relative relocations (`DT_RELR`) need glibc 2.36 where the binary runs; a native
/// build runs where it is built, so the build host's glibc decides. Cross builds and other
/// C libraries keep the classic table.
fn relr_supported() -> bool {
    if var("HOST") != var("TARGET") || var("CARGO_CFG_TARGET_ENV") != "gnu" {
        return false;
    }
    host_glibc().is_some_and(|(major, minor)| (major, minor) >= (2, 36))
}

/// The glibc version this build script runs on, when it runs on glibc.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn host_glibc() -> Option<(u32, u32)> {
    unsafe extern "C" {
        fn gnu_get_libc_version() -> *const std::ffi::c_char;
    }
    // SAFETY: glibc returns a pointer to a static NUL-terminated string.
    let version = unsafe { std::ffi::CStr::from_ptr(gnu_get_libc_version()) };
    let mut parts = version.to_str().ok()?.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// The glibc version this build script runs on, when it runs on glibc.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn host_glibc() -> Option<(u32, u32)> {
    None
}

/// A variable cargo sets for every build script ("" if it is missing).
fn var(name: &str) -> String {
    env::var(name).unwrap_or_default()
}
