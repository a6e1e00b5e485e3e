//! Builds the C and C++ tests against this crate's library and runs them.
//!
//! `cargo test -p weft-ffi` compiles the library with all its crate types (rlib, staticlib,
//! cdylib) before it builds the integration tests, into the same directory as the test
//! executables (`target/<profile>/deps`): the test finds `libweft_ffi.a` and
//! `libweft_ffi.so` next to its own executable, built from the sources under test by the
//! same cargo command. Nothing runs cargo again (a nested cargo would wait for the build
//! directory lock that the outer one holds).
//!
//! Sanitizers: the C and C++ code is compiled with `-fsanitize=address,undefined` (and
//! `float-cast-overflow`, which `undefined` leaves out in GCC: a NaN or huge floating-point
//! duration converted to an integer count)
//! (`-fno-sanitize-recover=all`, so any undefined behaviour fails the run). The Rust library
//! is not instrumented, but it allocates through the C allocator, which ASan replaces, so
//! ASan sees use-after-free, double free and overflows of memory that crosses the boundary,
//! and LeakSanitizer (on: `detect_leaks=1`) sees any handle a close does not free.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// How the test program links the library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// `libweft_ffi.a` and the system libraries Rust's standard library needs.
    Static,
    /// `-lweft_ffi` (libweft_ffi.so), found at run time through an rpath.
    Shared,
}

/// The language of a test program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// C11, built with gcc.
    C,
    /// C++17, built with g++.
    Cxx,
}

/// The crate's directory.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The directory holding the library cargo built for this test run.
pub fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let deps = exe
        .parent()
        .expect("the test executable's directory")
        .to_path_buf();
    for dir in [
        deps.clone(),
        deps.parent().map(Path::to_path_buf).unwrap_or_default(),
    ] {
        if dir.join("libweft_ffi.a").is_file() && dir.join("libweft_ffi.so").is_file() {
            return dir;
        }
    }
    panic!(
        "libweft_ffi.a and libweft_ffi.so are not next to {} (nor in its parent): run this \
         test through `cargo test -p weft-ffi`, which builds them",
        exe.display()
    );
}

/// Where built test programs go.
pub fn out_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("weft-ffi-tests");
    std::fs::create_dir_all(&dir).expect("create the test build directory");
    dir
}

/// Whether a compiler is on the PATH.
pub fn have(compiler: &str) -> bool {
    Command::new(compiler)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A built test program. Its file (about 9 MB when linked statically) is removed when the
/// guard drops, unless the test is failing: then it stays, to be run again by hand.
pub struct Program(PathBuf);

impl std::ops::Deref for Program {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Program {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

/// Compiles `sources` (relative to the crate) into the program `name`, with sanitizers,
/// warnings as errors, and the crate's `include/` on the include path.
pub fn build(name: &str, sources: &[&str], lang: Lang, link: Link) -> Program {
    let (compiler, std) = match lang {
        Lang::C => ("gcc", "-std=c11"),
        Lang::Cxx => ("g++", "-std=c++17"),
    };
    assert!(
        have(compiler),
        "{compiler} is not installed: scripts/test installs it (apt-get install gcc g++)"
    );
    let lib = lib_dir();
    // One file per build: tests of one binary build in parallel, and a program being
    // written cannot be started ("text file busy").
    static BUILDS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let exe = out_dir().join(format!("{name}-{}-{n}", std::process::id()));
    let mut cmd = Command::new(compiler);
    cmd.arg(std)
        .args(["-g", "-O1", "-Wall", "-Wextra", "-Werror", "-pthread"])
        .args([
            "-fsanitize=address,undefined,float-cast-overflow",
            "-fno-sanitize-recover=all",
        ])
        .arg("-fno-omit-frame-pointer")
        .arg("-D_POSIX_C_SOURCE=200809L")
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg("-I")
        .arg(crate_dir().join("tests/c"));
    for s in sources {
        cmd.arg(crate_dir().join(s));
    }
    cmd.arg("-o").arg(&exe);
    match link {
        Link::Static => {
            cmd.arg(lib.join("libweft_ffi.a"));
            // What Rust's standard library needs from the system (`rustc --print
            // native-static-libs` for this target).
            cmd.args([
                "-lgcc_s",
                "-lutil",
                "-lrt",
                "-lpthread",
                "-lm",
                "-ldl",
                "-lc",
            ]);
        }
        Link::Shared => {
            cmd.arg("-L")
                .arg(&lib)
                .arg("-lweft_ffi")
                .arg(format!("-Wl,-rpath,{}", lib.display()))
                // DT_RPATH, searched before LD_LIBRARY_PATH (a DT_RUNPATH is searched after):
                // under `cargo test` LD_LIBRARY_PATH also names target/<profile>, where an
                // older libweft_ffi.so from `cargo build` may lie.
                .arg("-Wl,--disable-new-dtags");
        }
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("run {compiler}: {e}"));
    assert!(
        out.status.success(),
        "{compiler} failed to build {name}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Program(exe)
}

/// A prefix for the object names of one program run; what is left under it is removed when
/// the guard drops, whatever happened.
pub struct Names(pub String);

impl Names {
    /// A prefix no other test (or run) uses.
    pub fn new(tag: &str) -> Names {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        Names(format!("ffi-{tag}-{}-{n}", std::process::id()))
    }

    /// The shared-memory files left under the prefix.
    pub fn leftovers(&self) -> Vec<String> {
        let want = format!("weft.{}", self.0);
        std::fs::read_dir("/dev/shm")
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(|n| n.starts_with(&want))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for Names {
    fn drop(&mut self) {
        for n in self.leftovers() {
            let _ = std::fs::remove_file(Path::new("/dev/shm").join(n));
        }
    }
}

/// The environment every sanitized test program runs with.
pub fn sanitizer_env(cmd: &mut Command) -> &mut Command {
    cmd.env(
        "ASAN_OPTIONS",
        "detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=1",
    )
    .env("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
    // Leak reports name frames of the Rust library by symbol; suppressions are not needed.
    .env("LSAN_OPTIONS", "report_objects=1")
}

/// Runs a built test program with `args` and its own name prefix; returns its output after
/// checking that it exited with success.
pub fn run(exe: &Path, args: &[&str], names: &Names) -> Output {
    let mut cmd = Command::new(exe);
    sanitizer_env(&mut cmd)
        .args(args)
        .env("WEFT_TEST_PREFIX", &names.0);
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", exe.display()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        exe.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        stderr
    );
    eprint!("{stderr}");
    out
}

/// A test program started in the background; killed if the test ends before it does.
pub struct Child(Option<std::process::Child>);

impl Child {
    /// Starts `exe ARGS...` with the sanitizer environment and the name prefix of `names`.
    pub fn spawn(exe: &Path, args: &[&str], names: &Names) -> Child {
        let mut cmd = Command::new(exe);
        sanitizer_env(&mut cmd)
            .args(args)
            .env("WEFT_TEST_PREFIX", &names.0)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        Child(Some(
            cmd.spawn()
                .unwrap_or_else(|e| panic!("start {}: {e}", exe.display())),
        ))
    }

    /// Waits for the program to exit, requires success, and returns its standard output.
    pub fn finish(mut self) -> String {
        let child = self.0.take().expect("finished once");
        let out = child.wait_with_output().expect("wait for the test program");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "the test program failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            if let Ok(out) = c.wait_with_output() {
                eprintln!(
                    "the test program was stopped; its stderr:\n{}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    }
}

/// Byte `i` of pattern `seed`, as `pattern_byte` in tests/c/check.h.
pub fn pattern_byte(seed: u64, i: usize) -> u8 {
    let mut x = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add((i as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9));
    x ^= x >> 29;
    (x ^ (x >> 17)) as u8
}

/// The length of record `i`, as `length_of` in tests/c/check.h.
pub fn length_of(i: u64, max: usize) -> usize {
    let mut x = i.wrapping_mul(0x2545_F491_4F6C_DD1D).wrapping_add(7);
    x ^= x >> 31;
    if i.is_multiple_of(13) {
        max - 1 - (x % 64) as usize
    } else {
        (x % (max as u64 / 8 + 1)) as usize
    }
}

/// Whether `bytes` are pattern `seed`.
pub fn is_pattern(bytes: &[u8], seed: u64) -> bool {
    bytes
        .iter()
        .enumerate()
        .all(|(i, &b)| b == pattern_byte(seed, i))
}
