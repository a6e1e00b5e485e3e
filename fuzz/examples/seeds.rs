//! Writes the seed corpus of `open_object`: a real stream, region and server rendezvous,
//! each as the fuzzer's input (a length selector byte, then the file's bytes), so that
//! mutation starts from valid headers instead of having to guess the magic.
//!
//! `cargo +nightly run --manifest-path fuzz/Cargo.toml --example seeds`

use std::path::Path;

fn main() {
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/open_object");
    std::fs::create_dir_all(&out).expect("corpus directory");
    let tag = std::process::id();
    let save = |kind: &str, name: &str| {
        let bytes = std::fs::read(format!("/dev/shm/weft.{name}")).expect("the object's file");
        let mut input = vec![0u8]; // selector 0: the file is exactly these bytes
        input.extend_from_slice(&bytes);
        std::fs::write(out.join(format!("seed-{kind}")), input).expect("write a seed");
        println!("seed-{kind}: {} bytes", bytes.len());
    };

    let name = format!("seed-stream-{tag}");
    let w = weft::stream::StreamWriter::create(&name, 4096).expect("stream");
    save("stream", &name);
    drop(w);

    let name = format!("seed-region-{tag}");
    let config = weft::pubsub::Config::default()
        .participants(2)
        .max_held(4)
        .topics(2)
        .ring_slots(8)
        .blocks(4)
        .block_size(64);
    let p = weft::pubsub::Publisher::create(&name, &config).expect("region");
    p.register("/a").expect("topic");
    save("region", &name);
    drop(p);
    let _ = std::fs::remove_file(format!("/dev/shm/weft.{name}"));

    let name = format!("seed-server-{tag}");
    let opts = weft::channel::ChannelOptions::new().slots(1);
    let s = weft::channel::Server::bind_with(&name, &opts).expect("server");
    save("server", &name);
    drop(s);
}
