//! `weft-py-peer`: the Rust side of weft-py's cross-language tests. Each subcommand plays one
//! side and reports on stdout, one line at a time.
//!
//! This binary is a test fixture; it is not part of weft's interface.

use std::io::Write;
use std::time::{Duration, Instant};
use weft::Error;
use weft::stream::StreamReader;

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize, what: &str) -> T {
    args.get(i)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("argument {i} ({what}) missing or malformed: {args:?}"))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match args.first().map(String::as_str).unwrap_or("") {
        "stream-crc" => stream_crc(&args),
        _ => {
            eprintln!("weft-py-peer: unknown command {args:?}");
            2
        }
    };
    std::process::exit(code);
}

/// `stream-crc NAME`: opens the stream NAME as its reader (waiting up to 20 s for it), says
/// "ready", then for every record until the writer closes prints
/// `record SEQ len=LEN crc=CRC32 aligned=BOOL` with the CRC-32 (IEEE, as Python's
/// `zlib.crc32`) of the bytes read in place in the grant (no copy), and finally `end N`.
fn stream_crc(args: &[String]) -> i32 {
    let name: String = arg(args, 1, "name");
    let mut r = StreamReader::open_timeout(&name, Duration::from_secs(20)).expect("open");
    say("ready");
    let mut seq = 0u64;
    loop {
        let g = match r.read_timeout(Duration::from_secs(60)) {
            Ok(g) => g,
            Err(Error::Closed) => break,
            Err(e) => {
                say(&format!("error {e}"));
                return 1;
            }
        };
        let t = Instant::now();
        let crc = crc32fast::hash(&g);
        let aligned = (g.as_ptr() as usize).is_multiple_of(4096);
        say(&format!(
            "record {seq} len={} crc={crc:08x} aligned={aligned} micros={}",
            g.len(),
            t.elapsed().as_micros()
        ));
        drop(g);
        seq += 1;
    }
    say(&format!("end {seq}"));
    0
}
