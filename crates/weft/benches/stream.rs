//! Micro-benchmarks of the shared-memory byte stream in one process and one thread: the cost
//! of the calls themselves (no cross-core traffic, no waiting). Cross-process figures against
//! the peers are in `weft-bench` (`cargo run --release -p weft-bench -- --filter stream`).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;
use weft::stream::{StreamReader, StreamWriter};

/// Record sizes of the write/read and reserve/commit groups.
const SIZES: [usize; 3] = [64, 256, 4096];
/// Records per `read_batch` call.
const BATCH: usize = 64;

/// A writer and a reader of a fresh 1 MiB stream with a name unique to this run.
fn pair(tag: &str) -> (StreamWriter, StreamReader) {
    let name = format!("crit-stream-{tag}-{}", std::process::id());
    let w = StreamWriter::create(&name, 1 << 20).expect("create the stream");
    let r = StreamReader::open(&name).expect("open the stream");
    (w, r)
}

/// `write` (copy in) then `read` (borrow, release on drop), one record at a time.
fn write_read(c: &mut Criterion) {
    let mut g = c.benchmark_group("stream/write+read");
    for size in SIZES {
        let (mut w, mut r) = pair(&format!("wr{size}"));
        let msg = vec![0xabu8; size];
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, _| {
            b.iter(|| {
                w.write(black_box(&msg))
                    .expect("room: the stream is drained every time");
                let rec = r.try_read().expect("the record just written");
                black_box(rec[0]);
            })
        });
    }
    g.finish();
}

/// `reserve`, write the whole record in place, `commit`; then `read` it back.
fn reserve_commit(c: &mut Criterion) {
    let mut g = c.benchmark_group("stream/reserve+commit+read");
    for size in SIZES {
        let (mut w, mut r) = pair(&format!("rc{size}"));
        let mut seq = 0u64;
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, &size| {
            b.iter(|| {
                let mut grant = w.reserve(size).expect("room");
                grant.fill(seq as u8);
                grant[..8].copy_from_slice(&seq.to_le_bytes());
                grant.commit(size).expect("commit what was reserved");
                seq += 1;
                let rec = r.try_read().expect("the record just committed");
                black_box(rec[0]);
            })
        });
    }
    g.finish();
}

/// 64 writes of 256 B, then one `read_batch(64)` that releases them all with one store.
fn read_batch(c: &mut Criterion) {
    let mut g = c.benchmark_group("stream/read_batch");
    let (mut w, mut r) = pair("batch");
    let msg = [0x5au8; 256];
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function(BenchmarkId::new("256B", BATCH), |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                w.write(black_box(&msg)).expect("room");
            }
            let batch = r.try_read_batch(BATCH).expect("the records just written");
            assert_eq!(batch.len(), BATCH);
            let mut sum = 0u64;
            for rec in batch.iter() {
                sum += rec[0] as u64;
            }
            black_box(sum);
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = write_read, reserve_commit, read_batch
}
criterion_main!(benches);
