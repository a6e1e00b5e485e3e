//! Pipelines: ordering through stages, fan-out, lossless links with a slow stage, panics,
//! shutdown on drop and within a timeout.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use weft::pipeline::Pipeline;
use weft::ring::RecvError;

#[cfg(not(miri))]
const N: u64 = 10_000;
#[cfg(miri)]
const N: u64 = 50;

#[test]
fn stages_run_in_order_and_lose_nothing() {
    let mut p = Pipeline::builder()
        .capacity(16)
        .name("order")
        .input::<u64>()
        .then(|x| x * 3)
        .then(|x| [x, x + 1])
        .build()
        .unwrap();
    for i in 0..N {
        p.publish(i);
        let v = p.output().recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(v, [i * 3, i * 3 + 1]);
    }
    p.close_input();
    let out = p.output().recv_timeout(Duration::from_secs(5));
    assert_eq!(out, Err(RecvError::Closed));
    assert_eq!(p.shutdown(), None);
}

#[test]
fn a_slow_stage_holds_the_input_back_instead_of_dropping() {
    let mut p = Pipeline::builder()
        .capacity(4)
        .input::<u64>()
        .then(|x| {
            std::thread::sleep(Duration::from_micros(50));
            x
        })
        .build()
        .unwrap();
    let n = N.min(2000);
    let mut got = Vec::new();
    for i in 0..n {
        p.publish(i);
        while let Ok(v) = p.output().try_recv() {
            got.push(v);
        }
    }
    p.close_input();
    loop {
        match p.output().recv_timeout(Duration::from_secs(5)) {
            Ok(v) => got.push(v),
            Err(RecvError::Closed) => break,
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(got, (0..n).collect::<Vec<_>>());
    assert_eq!(p.output().lagged(), 0);
}

#[test]
fn fan_out_feeds_both_branches() {
    let mut p = Pipeline::builder()
        .input::<u32>()
        .then(|x| x + 1)
        .fan_out(|x| x as u64 * 10, |x| [x; 2])
        .build()
        .unwrap();
    for i in 0..10 {
        p.publish(i);
    }
    let (a, b) = p.output();
    for i in 0..10u32 {
        assert_eq!(
            a.recv_timeout(Duration::from_secs(5)),
            Ok((i as u64 + 1) * 10)
        );
        assert_eq!(b.recv_timeout(Duration::from_secs(5)), Ok([i + 1; 2]));
    }
}

#[test]
fn a_panicking_stage_is_reported_and_everything_stops() {
    let mut p = Pipeline::builder()
        .name("boom")
        .input::<u64>()
        .then(|x| x)
        .then(|x| {
            assert!(x < 5, "too big: {x}");
            x
        })
        .build()
        .unwrap();
    for i in 0..10 {
        p.publish(i); // never blocks for long, even after the failure
    }
    let mut got = Vec::new();
    loop {
        match p.output().recv_timeout(Duration::from_secs(5)) {
            Ok(v) => got.push(v),
            Err(RecvError::Closed) => break,
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(got, [0, 1, 2, 3, 4]);
    let f = p.failure().expect("a failure");
    assert!(f.starts_with("stage 'boom-1' panicked: too big: 5"), "{f}");
    assert_eq!(p.shutdown(), Some(f));
}

#[test]
fn dropping_the_pipeline_stops_and_joins_every_stage() {
    let live = Arc::new(AtomicUsize::new(0));
    let p = {
        // Pinned, from the first core this process may run on (not necessarily core 0).
        let first = weft::affinity::allowed_cores()[0];
        let mut b = Pipeline::builder().pin_cores(first).input::<u64>();
        for _ in 0..3 {
            let c = Count::new(&live);
            b = b.then(move |x| {
                let _ = &c;
                x
            });
        }
        b.build().unwrap()
    };
    assert_eq!(live.load(Ordering::SeqCst), 3);
    drop(p); // nothing published, output never read: still stops promptly
    assert_eq!(
        live.load(Ordering::SeqCst),
        0,
        "every stage closure was dropped"
    );
}

#[test]
fn shutdown_timeout_joins_every_stage_in_time() {
    let live = Arc::new(AtomicUsize::new(0));
    let mut b = Pipeline::builder().name("timely").input::<u64>();
    for _ in 0..3 {
        let c = Count::new(&live);
        b = b.then(move |x| {
            let _ = &c;
            x + 1
        });
    }
    let mut p = b.build().unwrap();
    p.publish(1);
    assert_eq!(p.output().recv_timeout(Duration::from_secs(5)), Ok(4));
    let r = p.shutdown_timeout(Duration::from_secs(60));
    assert!(matches!(r, Ok(None)), "{r:?}");
    assert_eq!(live.load(Ordering::SeqCst), 0, "every stage was joined");

    // A failure is reported as `shutdown` reports it.
    let mut q = Pipeline::builder()
        .name("failing")
        .input::<u64>()
        .then(|x| if x == 0 { panic!("zero") } else { x })
        .build()
        .unwrap();
    q.publish(0);
    let out = q.output().recv_timeout(Duration::from_secs(5));
    assert_eq!(out, Err(RecvError::Closed));
    let r = q.shutdown_timeout(Duration::from_secs(60));
    assert!(
        matches!(&r, Ok(Some(f)) if f == "stage 'failing-0' panicked: zero"),
        "{r:?}"
    );
}

#[test]
fn shutdown_timeout_leaves_a_stuck_stage_and_returns() {
    let live = Arc::new(AtomicUsize::new(0));
    let (unblock, blocked) = std::sync::mpsc::channel::<()>();
    let (entered, in_stage) = std::sync::mpsc::channel::<()>();
    let blocked = std::sync::Mutex::new(blocked);
    let c = Count::new(&live);
    let mut p = Pipeline::builder()
        .name("stuck")
        .input::<u64>()
        .then(move |x| {
            let _ = &c;
            let _ = entered.send(());
            // Until the test sends or drops `unblock`.
            let _ = blocked.lock().unwrap().recv();
            x
        })
        .build()
        .unwrap();
    p.publish(1);
    in_stage.recv_timeout(Duration::from_secs(30)).unwrap();
    let t = std::time::Instant::now();
    let r = p.shutdown_timeout(Duration::from_millis(200));
    assert!(matches!(r, Err(weft::Error::Timeout)), "{r:?}");
    assert!(
        t.elapsed() >= Duration::from_millis(200),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(live.load(Ordering::SeqCst), 1, "the stuck stage still runs");
    // Once its function returns, the detached stage exits without another message.
    drop(unblock);
    let t = std::time::Instant::now();
    while live.load(Ordering::SeqCst) != 0 {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the stage never exited"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Counts the live copies of a stage's capture: a stage's closure is dropped when its thread
/// ends.
struct Count(Arc<AtomicUsize>);

impl Count {
    fn new(live: &Arc<AtomicUsize>) -> Self {
        live.fetch_add(1, Ordering::SeqCst);
        Count(live.clone())
    }
}

impl Drop for Count {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[test]
fn lossy_links_skip_instead_of_waiting() {
    let mut p = Pipeline::builder()
        .capacity(4)
        .lossy(true)
        .input::<u64>()
        .then(|x| x)
        .build()
        .unwrap();
    // Nobody reads the output: a lossy pipeline never blocks its input.
    for i in 0..1000 {
        p.publish(i);
    }
    p.close_input();
    // What the output kept: in order, ending with the newest message; the rest were skipped
    // (by the stage on its input, or here on the output, where it is counted).
    let (mut got, mut skipped, mut last) = (0u64, 0u64, None::<u64>);
    loop {
        match p.output().recv_timeout(Duration::from_secs(10)) {
            Ok(v) => {
                assert!(last.is_none_or(|l| l < v), "{v} after {last:?}");
                last = Some(v);
                got += 1;
            }
            Err(RecvError::Lagged { skipped: k }) => skipped += k,
            Err(RecvError::Closed) => break,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(last, Some(999), "the newest message reaches the output");
    assert!(
        got < 1000,
        "a capacity-4 lossy pipeline kept all {got} messages"
    );
    assert!(got + skipped <= 1000);
    assert_eq!(p.shutdown(), None);
}

/// The CPUs a thread may run on, from the kernel (`Cpus_allowed_list` of
/// /proc/thread-self/status): "1", "0-1", "0,2".
#[cfg(not(miri))]
fn my_cpus() -> String {
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

/// Each stage runs on a thread named after the pipeline and its index, pinned to its own core
/// when asked: stage 0 on the first core given, the next stages on the following allowed
/// cores, wrapping around.
#[cfg(not(miri))]
#[test]
fn stages_run_on_named_threads_pinned_to_their_cores() {
    let allowed = weft::affinity::allowed_cores();
    let first = *allowed.last().unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = |seen: &Arc<std::sync::Mutex<Vec<(String, String)>>>| {
        let seen = seen.clone();
        move |x: u64| {
            let me = std::thread::current();
            seen.lock()
                .unwrap()
                .push((me.name().unwrap_or("").to_string(), my_cpus()));
            x
        }
    };
    let mut p = Pipeline::builder()
        .name("pinned")
        .pin_cores(first)
        .input::<u64>()
        .then(record(&seen))
        .then(record(&seen))
        .build()
        .unwrap();
    p.publish(7);
    assert_eq!(p.output().recv_timeout(Duration::from_secs(5)), Ok(7));
    let seen = seen.lock().unwrap().clone();
    // Stage 0 on the last allowed core, stage 1 wraps around to the first.
    let want = [
        ("pinned-0".to_string(), first.to_string()),
        ("pinned-1".to_string(), allowed[0].to_string()),
    ];
    assert_eq!(seen, want);
}

/// A first core the process may not run on is an error from `build`, not a pipeline that
/// quietly runs unpinned.
#[cfg(not(miri))]
#[test]
fn pinning_to_a_core_outside_the_allowed_set_is_an_error() {
    let outside = weft::affinity::allowed_cores().last().unwrap() + 1;
    let err = Pipeline::builder()
        .pin_cores(outside)
        .input::<u64>()
        .then(|x| x)
        .build()
        .map(|_| ())
        .unwrap_err();
    assert_eq!(err.kind(), weft::ErrorKind::InvalidArgument, "{err}");
}

/// A thread pinned to one core builds a pipeline pinned to another core of the process: the
/// build succeeds and the stage runs there.
#[cfg(not(miri))]
#[test]
fn a_thread_pinned_to_one_core_builds_a_pipeline_pinned_to_another() {
    let allowed = weft::affinity::allowed_cores();
    if allowed.len() < 2 {
        eprintln!("one allowed core ({allowed:?}): nothing to test");
        return;
    }
    let (here, there) = (allowed[0], allowed[1]);
    weft::affinity::pin_current_thread(here).unwrap();
    assert_eq!(weft::affinity::allowed_cores(), [here]);
    let seen = Arc::new(std::sync::Mutex::new(None));
    let record = seen.clone();
    let mut p = Pipeline::builder()
        .name("elsewhere")
        .pin_cores(there)
        .input::<u64>()
        .then(move |x| {
            *record.lock().unwrap() = Some(my_cpus());
            x
        })
        .build()
        .unwrap();
    p.publish(5);
    assert_eq!(p.output().recv_timeout(Duration::from_secs(5)), Ok(5));
    assert_eq!(seen.lock().unwrap().clone(), Some(there.to_string()));
    assert_eq!(
        my_cpus(),
        here.to_string(),
        "the building thread stays where it was"
    );
    assert_eq!(p.shutdown(), None);
}

/// Messages of 1 MiB (which the rings take) through two stages and a fan-out: every stage
/// thread has the stack its messages need. On the default 2 MiB thread stack, a stage holding a
/// few copies of such a message overflowed it, and the process aborted.
#[test]
fn stages_carry_messages_of_a_mebibyte() {
    const BIG: usize = 1 << 20;
    // This test's own thread gets a stack for its copies too (the default is 2 MiB).
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(|| {
            let mut p = Pipeline::builder()
                .capacity(2)
                .input::<[u8; BIG]>()
                .then(|mut x| {
                    x[BIG - 1] = x[0].wrapping_add(1);
                    x
                })
                .fan_out(|x| x, |x| x[BIG - 1] as u64)
                .build()
                .unwrap();
            for i in 0..4u8 {
                p.publish([i; BIG]);
                let (a, b) = p.output();
                let got = a.recv_timeout(Duration::from_secs(60)).unwrap();
                assert_eq!((got[0], got[BIG - 2], got[BIG - 1]), (i, i, i + 1));
                assert_eq!(b.recv_timeout(Duration::from_secs(60)), Ok(i as u64 + 1));
            }
            assert_eq!(p.shutdown(), None);
        })
        .unwrap()
        .join()
        .unwrap();
}

/// A lossless pipeline split into its feeding handle and its output: one thread publishes ten
/// times what the links hold while another reads, and everything arrives in order. Without
/// `split`, the output is only reachable through the handle the blocked publish borrows.
#[test]
fn a_split_pipeline_is_fed_and_read_on_two_threads() {
    const N: u64 = 100;
    let p = Pipeline::builder()
        .capacity(4)
        .input::<u64>()
        .then(|x| x + 1)
        .build()
        .unwrap();
    let (mut p, mut out) = p.split();
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        loop {
            match out.recv_timeout(Duration::from_secs(60)) {
                Ok(v) => got.push(v),
                Err(RecvError::Closed) => return got,
                Err(e) => panic!("{e}"),
            }
        }
    });
    for i in 0..N {
        p.publish_timeout(i, Duration::from_secs(60)).unwrap();
    }
    p.close_input();
    assert_eq!(reader.join().unwrap(), Vec::from_iter(1..=N));
    assert_eq!(p.shutdown(), None);
}

/// A stage of a lossy pipeline that was lapped on its input skips what it missed and carries
/// on: the newest message still reaches the output.
#[test]
fn a_lossy_stage_that_lagged_carries_on() {
    let (started_tx, started) = std::sync::mpsc::channel::<()>();
    let (release_tx, release) = std::sync::mpsc::channel::<()>();
    let mut p = Pipeline::builder()
        .capacity(4)
        .lossy(true)
        .input::<u64>()
        .then(move |x| {
            if x == 0 {
                // Holds message 0 until the input has been lapped.
                started_tx.send(()).unwrap();
                release.recv().unwrap();
            }
            x
        })
        .build()
        .unwrap();
    p.publish(0);
    started.recv_timeout(Duration::from_secs(10)).unwrap();
    for i in 1..100 {
        p.publish(i); // laps the stage's 4-slot input
    }
    release_tx.send(()).unwrap();
    p.close_input();
    let mut got = Vec::new();
    loop {
        match p.output().recv_timeout(Duration::from_secs(10)) {
            Ok(v) => got.push(v),
            Err(RecvError::Lagged { .. }) => {}
            Err(RecvError::Closed) => break,
            Err(e) => panic!("{e}"),
        }
    }
    // (Message 0 itself may be lapped in the 4-slot output before it is read.)
    assert_eq!(
        got.last(),
        Some(&99),
        "the stage stopped at its lag: {got:?}"
    );
    assert_eq!(p.shutdown(), None);
}

/// Shutting down stops a stage that waits for room in an output nobody reads.
#[test]
fn shutdown_stops_a_stage_waiting_for_room() {
    let mut p = Pipeline::builder()
        .capacity(2)
        .input::<u64>()
        .then(|x| x)
        .build()
        .unwrap();
    // Nobody reads the output: the links fill up and the stage waits to publish.
    let mut sent = 0;
    while sent < 100 && p.publish_timeout(sent, Duration::from_millis(50)).is_ok() {
        sent += 1;
    }
    assert!(
        sent < 100,
        "a lossless pipeline of 2-slot links took {sent} messages"
    );
    let r = p.shutdown_timeout(Duration::from_secs(10));
    assert!(matches!(r, Ok(None)), "{r:?}");
}
