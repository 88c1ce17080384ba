//! Size of a data directory: allocated (like `du`) and apparent (like
//! `du --apparent-size`).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// Sizes of every file below a directory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirSize {
    /// Bytes allocated on the filesystem (st_blocks × 512).
    pub allocated: u64,
    /// Sum of file lengths (st_size).
    pub apparent: u64,
    /// Number of files.
    pub files: u64,
}

/// Walks `dir` (not following symlinks). Files that vanish during the walk
/// (an engine deleting them) are skipped.
pub fn measure(dir: &Path) -> DirSize {
    let mut s = DirSize::default();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let Ok(md) = e.path().symlink_metadata() else {
                continue;
            };
            if md.is_dir() {
                stack.push(e.path());
            } else if md.is_file() {
                s.allocated += md.blocks() * 512;
                s.apparent += md.len();
                s.files += 1;
            }
        }
    }
    s
}

/// Sums the sizes of several files or directories.
pub fn measure_all(paths: &[std::path::PathBuf]) -> DirSize {
    let mut s = DirSize::default();
    for p in paths {
        let d = match p.symlink_metadata() {
            Ok(md) if md.is_file() => DirSize {
                allocated: md.blocks() * 512,
                apparent: md.len(),
                files: 1,
            },
            // A directory, never a link to one (a server's user could
            // point its data path anywhere).
            Ok(md) if md.is_dir() => measure(p),
            _ => DirSize::default(),
        };
        s.allocated += d.allocated;
        s.apparent += d.apparent;
        s.files += d.files;
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_files_and_sparse() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a"), vec![1u8; 10_000]).unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub/b"), vec![1u8; 5_000]).unwrap();
        let f = std::fs::File::create(d.path().join("sparse")).unwrap();
        f.set_len(1 << 30).unwrap();
        let s = super::measure(d.path());
        assert_eq!(s.files, 3);
        assert_eq!(s.apparent, 15_000 + (1 << 30));
        assert!(s.allocated >= 15_000 && s.allocated < 1 << 20, "{s:?}");
    }
}
