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

/// The layout is for a release-like Linux build linked by rustc's default linker with this
/// repository's flags: the order script names v0 symbols (`.cargo/config.toml`), and a
/// linker a user configured (mold, for one) may not read linker scripts. Anything else
/// builds exactly as cargo would without this script.
fn layout_applies() -> bool {
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    let flags: Vec<&str> = flags.split('\x1f').collect();
    let v0 = flags.windows(2).any(|w| w == ["-C", "symbol-mangling-version=v0"])
        || flags.contains(&"-Csymbol-mangling-version=v0");
    let own_linker =
        env::var_os("RUSTC_LINKER").is_some() || flags.iter().any(|f| f.contains("linker") || f.contains("fuse-ld"));
    var("PROFILE") == "release" && var("CARGO_CFG_TARGET_OS") == "linux" && v0 && !own_linker
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
