//! Pipelines: ordering through stages, fan-out, lossless links with a slow stage, panics,
//! shutdown on drop.

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
    struct Count(Arc<AtomicUsize>);
    impl Drop for Count {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }
    let p = {
        let mut b = Pipeline::builder().pin_cores(0).input::<u64>();
        for _ in 0..3 {
            live.fetch_add(1, Ordering::SeqCst);
            let c = Count(live.clone());
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
    assert_eq!(p.shutdown(), None);
}
