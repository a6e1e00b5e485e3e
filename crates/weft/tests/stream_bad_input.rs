//! Bad input, each a clear and specific error: foreign files, wrong magic, version and kind,
//! truncated files, a header claiming more than the file holds, bad names, symlinks.

mod common;

use common::{Cleanup, shm_path, unique};
use std::os::unix::fs::FileExt;
use weft::stream::{StreamReader, StreamWriter};
use weft::{Error, ErrorKind};

/// Creates a valid stream, lets `spoil` change its bytes, and opens it as a reader.
fn open_spoiled(tag: &str, spoil: impl FnOnce(&std::fs::File)) -> (Error, Cleanup) {
    let name = unique(tag);
    let c = Cleanup(name.clone());
    let w = StreamWriter::create(&name, 4096).unwrap();
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(shm_path(&name))
        .unwrap();
    spoil(&f);
    let err = StreamReader::open(&name).map(|_| ()).unwrap_err();
    std::mem::forget(w); // its Drop would touch the spoiled object; the Cleanup removes it
    (err, c)
}

#[test]
fn a_foreign_file_is_not_weft() {
    let name = unique("foreign");
    let _c = Cleanup(name.clone());
    std::fs::write(
        shm_path(&name),
        b"not a weft object at all, just text. ".repeat(200),
    )
    .unwrap();
    let err = StreamReader::open(&name).unwrap_err();
    assert!(matches!(err, Error::NotWeft { .. }), "{err}");
    assert!(err.to_string().contains("is not a weft object"), "{err}");
    // A writer does not destroy it either.
    assert_eq!(
        StreamWriter::create(&name, 4096).unwrap_err().kind(),
        ErrorKind::NotWeft
    );
    assert!(
        std::fs::read(shm_path(&name))
            .unwrap()
            .starts_with(b"not a weft")
    );
}

#[test]
fn wrong_magic() {
    let (err, _c) = open_spoiled("magic", |f| f.write_at(b"NOTWEFT!", 0).map(|_| ()).unwrap());
    assert!(
        matches!(err, Error::NotWeft { found, .. } if found == u64::from_le_bytes(*b"NOTWEFT!")),
        "{err}"
    );
}

#[test]
fn wrong_version() {
    let (err, _c) = open_spoiled("version", |f| {
        f.write_at(&99u32.to_le_bytes(), 8).map(|_| ()).unwrap()
    });
    assert!(
        matches!(
            err,
            Error::VersionMismatch {
                found: 99,
                expected,
                ..
            } if expected == weft::shm::LAYOUT_VERSION
        ),
        "{err}"
    );
    assert!(err.to_string().contains("layout version 99"), "{err}");
}

#[test]
fn wrong_kind() {
    let (err, _c) = open_spoiled("kind", |f| {
        f.write_at(&2u32.to_le_bytes(), 12).map(|_| ()).unwrap()
    });
    assert!(
        matches!(
            err,
            Error::WrongKind {
                found: "region",
                expected: "stream",
                ..
            }
        ),
        "{err}"
    );
    let (err, _c) = open_spoiled("kind2", |f| {
        f.write_at(&77u32.to_le_bytes(), 12).map(|_| ()).unwrap()
    });
    assert!(
        matches!(
            err,
            Error::Corrupt {
                what: "object kind",
                value: 77,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_short_file_is_truncated() {
    let name = unique("short");
    let _c = Cleanup(name.clone());
    std::fs::write(shm_path(&name), [0u8; 64]).unwrap();
    let err = StreamReader::open(&name).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Truncated {
                size: 64,
                needed: 128,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_file_cut_below_its_layout_is_truncated() {
    let (err, _c) = open_spoiled("cut", |f| f.set_len(4096 + 100).unwrap());
    assert!(
        matches!(
            err,
            Error::Truncated {
                size: 4196,
                needed: 8192,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_header_claiming_more_capacity_than_the_file_holds() {
    // config.capacity is the first field of the control block, at offset 128.
    let (err, _c) = open_spoiled("capacity", |f| {
        f.write_at(&(1u64 << 30).to_le_bytes(), 128)
            .map(|_| ())
            .unwrap()
    });
    assert!(matches!(err, Error::Truncated { .. }), "{err}");
    let (err, _c) = open_spoiled("capacity2", |f| {
        f.write_at(&u64::MAX.to_le_bytes(), 128)
            .map(|_| ())
            .unwrap()
    });
    assert!(
        matches!(
            err,
            Error::Corrupt {
                what: "capacity",
                ..
            }
        ),
        "{err}"
    );
    let (err, _c) = open_spoiled("align", |f| {
        f.write_at(&3u64.to_le_bytes(), 136).map(|_| ()).unwrap()
    });
    assert!(
        matches!(
            err,
            Error::Corrupt {
                what: "record alignment",
                value: 3,
                ..
            }
        ),
        "{err}"
    );
    let (err, _c) = open_spoiled("total", |f| {
        f.write_at(&(1u64 << 40).to_le_bytes(), 16)
            .map(|_| ())
            .unwrap()
    });
    assert!(
        matches!(err, Error::Truncated { needed, .. } if needed == 1 << 40),
        "{err}"
    );
}

#[test]
fn a_cursor_out_of_range_is_corrupt_at_open() {
    // The read cursor lives at 128 + 192.
    let (err, _c) = open_spoiled("cursor", |f| {
        f.write_at(&(1u64 << 50).to_le_bytes(), 320)
            .map(|_| ())
            .unwrap()
    });
    assert!(
        matches!(
            err,
            Error::Corrupt {
                what: "read cursor",
                ..
            }
        ),
        "{err}"
    );
}

/// A cursor inside the data area but off the record grid (not a multiple of the alignment)
/// would become the offset of an 8-byte atomic word that straddles its neighbours: a reader
/// opening at it, or a writer taking over at it, reports `Corrupt` instead.
#[test]
fn a_cursor_off_the_record_grid_is_corrupt_at_open() {
    for r in [4u64, 60] {
        // The read cursor lives at 128 + 192.
        let (err, _c) = open_spoiled("cursor-grid", |f| {
            f.write_at(&r.to_le_bytes(), 320).map(|_| ()).unwrap()
        });
        assert!(
            matches!(
                err,
                Error::Corrupt {
                    what: "read cursor",
                    value,
                    ..
                } if value == r
            ),
            "{r}: {err}"
        );
    }
    // A writer taking over a stream whose write cursor (128 + 64) is off the grid.
    let name = unique("cursor-grid-w");
    let _c = Cleanup(name.clone());
    let w = StreamWriter::create(&name, 4096).unwrap();
    let r = StreamReader::open(&name).unwrap();
    drop(w);
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(shm_path(&name))
        .unwrap();
    f.write_at(&4u64.to_le_bytes(), 192).unwrap();
    let err = StreamWriter::create(&name, 4096).map(|_| ()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Corrupt {
                what: "write cursor",
                value: 4,
                ..
            }
        ),
        "{err}"
    );
    drop(r);
}

#[test]
fn an_unfinished_object_is_not_ready() {
    // Zeroes: what a creator that died before initialising leaves behind.
    let name = unique("unready");
    let _c = Cleanup(name.clone());
    std::fs::write(shm_path(&name), vec![0u8; 8192]).unwrap();
    let err = StreamReader::open(&name).unwrap_err();
    assert!(matches!(err, Error::NotReady { .. }), "{err}");
    // Its creator is gone (pid 0 recorded): a writer replaces it.
    let mut w = StreamWriter::create(&name, 4096).unwrap();
    w.write(b"ok").unwrap();
}

#[test]
fn bad_names_are_refused() {
    for name in [
        "",
        "a/b",
        "..",
        "../etc",
        "a..b",
        ".hidden",
        "nul\0byte",
        "space here",
        "ünï",
    ] {
        let err = StreamWriter::create(name, 4096).unwrap_err();
        assert!(matches!(err, Error::InvalidName { .. }), "{name:?}: {err}");
        assert_eq!(
            StreamReader::open(name).unwrap_err().kind(),
            ErrorKind::InvalidName
        );
    }
    let long = "x".repeat(201);
    assert_eq!(
        StreamWriter::create(&long, 4096).unwrap_err().kind(),
        ErrorKind::InvalidName
    );
}

#[test]
fn a_missing_stream_is_not_found() {
    let err = StreamReader::open(&unique("missing")).unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    let t = std::time::Instant::now();
    let err = StreamReader::open_timeout(&unique("missing"), std::time::Duration::from_millis(50))
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    assert!(t.elapsed() >= std::time::Duration::from_millis(50));
}

#[test]
fn symlinks_are_not_followed() {
    let name = unique("symlink");
    let _c = Cleanup(name.clone());
    let target = std::env::temp_dir().join(format!("weft-symlink-target-{}", std::process::id()));
    std::fs::write(&target, b"precious").unwrap();
    std::os::unix::fs::symlink(&target, shm_path(&name)).unwrap();
    assert!(StreamReader::open(&name).is_err());
    assert!(StreamWriter::create(&name, 4096).is_err());
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");
    std::fs::remove_file(&target).unwrap();
}

/// An object larger than the room left in /dev/shm (a container's small tmpfs) fails at its
/// creation with an I/O error (`ENOSPC`): with a sparse file the creation succeeded, and the
/// first write into a page the file system could not back killed the writer with `SIGBUS`.
/// The test peer runs in a mount namespace of its own, over a 1 MiB tmpfs; needs root.
#[test]
fn an_object_larger_than_the_room_left_fails_at_creation() {
    let run = |capacity: &str| {
        let script = format!(
            "mount -t tmpfs -o size=1m tmpfs /dev/shm && exec {} stream-create full {capacity}",
            env!("CARGO_BIN_EXE_weft-test-peer")
        );
        std::process::Command::new("unshare")
            .args(["--mount", "sh", "-c", &script])
            .output()
    };
    match run("4096") {
        Ok(out) if out.status.success() => {
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "created");
        }
        _ => {
            eprintln!("not run: this process cannot make a mount namespace with its own tmpfs");
            return;
        }
    }
    let out = run("4194304").unwrap();
    assert!(out.status.success(), "the peer died: {:?}", out.status);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "error Io",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A header whose layout size is below the header itself is corrupt, named as such.
#[test]
fn a_total_size_below_the_header_is_corrupt() {
    let (err, _c) = open_spoiled("sb-total-small", |f| {
        f.write_at(&64u64.to_le_bytes(), 16).map(|_| ()).unwrap()
    });
    assert!(
        matches!(
            err,
            Error::Corrupt {
                what: "total size",
                value: 64,
                ..
            }
        ),
        "{err}"
    );
}

/// A file of exactly one header of zeroes is an object whose creator has not written its
/// header yet (not ready), not a truncated one: only a file shorter than the header is.
#[test]
fn a_header_sized_file_of_zeroes_is_not_ready() {
    let name = unique("sb-header-zeroes");
    let _c = Cleanup(name.clone());
    std::fs::write(shm_path(&name), [0u8; 128]).unwrap();
    let err = StreamReader::open_timeout(&name, std::time::Duration::from_millis(20)).unwrap_err();
    assert!(matches!(err, Error::NotReady { pid: 0, .. }), "{err}");
}

/// The data area starts at offset 4096: a configuration naming any other offset is corrupt,
/// even one that fits the file.
#[test]
fn a_data_offset_other_than_4096_is_corrupt() {
    // config.data_offset is the third field of the control block: 128 + 16.
    for bad in [0u64, 8, 2048, 8192] {
        let (err, _c) = open_spoiled("sb-data-offset", |f| {
            f.write_at(&bad.to_le_bytes(), 144).map(|_| ()).unwrap()
        });
        assert!(
            matches!(err, Error::Corrupt { what: "data offset", value, .. } if value == bad),
            "data offset {bad}: {err}"
        );
    }
}

/// A symlink under the prefix is refused even when it points at a valid weft object: the
/// link is not the object, and its target may be anyone's file.
#[test]
fn a_symlink_to_a_weft_object_is_not_followed() {
    let (link, target) = (unique("symlink-weft"), unique("symlink-weft-target"));
    let _c = (Cleanup(link.clone()), Cleanup(target.clone()));
    let mut w = StreamWriter::create(&target, 4096).unwrap();
    w.write(b"x").unwrap();
    std::os::unix::fs::symlink(shm_path(&target), shm_path(&link)).unwrap();
    let err = StreamReader::open(&link).map(|_| ()).unwrap_err();
    assert!(matches!(err, Error::NotWeft { found: 0, .. }), "{err}");
    let o = weft::shm::object(&link).unwrap();
    assert_eq!(o.error.map(|e| e.kind()), Some(ErrorKind::NotWeft));
}

/// The header's layout size is checked against both of its bounds, each inclusive: the
/// 128-byte header alone and the file's own size pass the header's check (the stream's own
/// checks still hold the rest), one byte more than the file is truncated.
#[test]
fn the_layout_size_bounds_are_inclusive() {
    for (total, truncated) in [(128u64, false), (8192, false), (8193, true)] {
        let name = unique("total-bound");
        let _c = Cleanup(name.clone());
        let _w = StreamWriter::create(&name, 4096).unwrap();
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(shm_path(&name))
            .unwrap();
        assert_eq!(f.metadata().unwrap().len(), 8192);
        f.write_at(&total.to_le_bytes(), 16).unwrap();
        let opened = StreamReader::open(&name).map(|_| ());
        if truncated {
            assert!(
                matches!(
                    opened,
                    Err(Error::Truncated {
                        size: 8192,
                        needed: 8193,
                        ..
                    })
                ),
                "{total}: {opened:?}"
            );
        } else {
            assert!(opened.is_ok(), "{total}: {opened:?}");
        }
    }
}
