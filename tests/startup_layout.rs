//! The release layout (`link/startup-order.ld`, linked by build.rs) places functions by
//! name patterns; a pattern this source no longer has matches nothing and the idle server
//! quietly grows back (README, Scale: 13.5 → 19.8 MB without the order). This checks that
//! the script still names this source's functions, in the binary under test.

use std::collections::HashSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use regex::Regex;

use crate::util::bin;

/// Share of the script's patterns that must name a function of the test binary. Measured
/// 2026-12-02: 78 % of 2,512 in the debug build (the rest are functions an optimised build
/// has and a debug build does not: specialised or split copies). A script left behind by a
/// large change, or a build without v0 names, falls far below.
const MIN_SHARE: f64 = 0.6;

#[test]
fn the_startup_layout_still_names_this_sources_functions() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let script = std::fs::read_to_string(root.join("link/startup-order.ld")).unwrap();
    let patterns: Vec<&str> = script
        .lines()
        .map(str::trim)
        .filter(|l| !l.ends_with('{')) // the output section's own line
        .filter_map(|l| l.strip_prefix(".text."))
        .collect();
    assert!(
        patterns.len() > 1000,
        "{} patterns: the script lost its list",
        patterns.len()
    );

    // The script's own normalisation (scripts/startup-order, `pattern`), applied to every
    // function of the binary; a pattern from a promoted (`.llvm.`) name ends in `*`.
    let disambiguator = Regex::new(r"Cs[0-9A-Za-z]*_").unwrap();
    let backref = Regex::new(r"B[0-9A-Za-z]*_").unwrap();
    let functions = function_names(Path::new(bin()));
    let v0 = functions.iter().filter(|n| n.starts_with("_R")).count();
    assert!(
        v0 * 2 > functions.len(),
        "{v0} of {} functions have v0 names: build without RUSTFLAGS so .cargo/config.toml applies",
        functions.len()
    );
    let normalised: HashSet<String> = functions
        .iter()
        .map(|n| {
            let n = n.split(".llvm.").next().unwrap_or(n);
            let n = disambiguator.replace_all(n, "Cs*_");
            backref.replace_all(&n, "B*_").into_owned()
        })
        .collect();
    let found = patterns
        .iter()
        .filter(|p| normalised.contains(p.trim_end_matches('*')))
        .count();
    let share = found as f64 / patterns.len() as f64;
    assert!(
        share >= MIN_SHARE,
        "link/startup-order.ld names {found} of its {} functions in this build ({:.0} %, want {:.0} %): \
         run scripts/startup-order to write it for this source",
        patterns.len(),
        share * 100.0,
        MIN_SHARE * 100.0
    );
}

/// The names of the functions an ELF64 little-endian binary defines (`.symtab`).
fn function_names(path: &Path) -> Vec<String> {
    let mut file = File::open(path).unwrap();
    let header = read_at(&mut file, 0, 64);
    assert_eq!(
        &header[..6],
        b"\x7fELF\x02\x01",
        "{} is not a 64-bit little-endian ELF",
        path.display()
    );
    let shoff = u64_at(&header, 0x28);
    let shentsize = u16::from_le_bytes([header[0x3a], header[0x3b]]) as u64;
    let shnum = u16::from_le_bytes([header[0x3c], header[0x3d]]) as u64;
    let sections = read_at(&mut file, shoff, shentsize * shnum);
    let section = |i: u64| &sections[(i * shentsize) as usize..((i + 1) * shentsize) as usize];
    let symtab = (0..shnum)
        .map(section)
        .find(|s| u32::from_le_bytes([s[4], s[5], s[6], s[7]]) == 2)
        .unwrap_or_else(|| panic!("{} has no symbol table (stripped?)", path.display()));
    let strtab = section(u32::from_le_bytes([symtab[40], symtab[41], symtab[42], symtab[43]]) as u64);
    let symbols = read_at(&mut file, u64_at(symtab, 24), u64_at(symtab, 32));
    let strings = read_at(&mut file, u64_at(strtab, 24), u64_at(strtab, 32));
    symbols
        .chunks_exact(24)
        .filter(|s| s[4] & 0xf == 2 && u16::from_le_bytes([s[6], s[7]]) != 0)
        .filter_map(|s| {
            let start = u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as usize;
            let len = strings.get(start..)?.iter().position(|&b| b == 0)?;
            String::from_utf8(strings[start..start + len].to_vec()).ok()
        })
        .collect()
}

fn read_at(file: &mut File, offset: u64, len: u64) -> Vec<u8> {
    let mut buf = vec![0; len as usize];
    file.seek(SeekFrom::Start(offset)).unwrap();
    file.read_exact(&mut buf).unwrap();
    buf
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}
