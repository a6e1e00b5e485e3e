//! Pinning a pipeline's stages does not depend on where the building thread is pinned: the
//! kernel decides whether a stage may run on its core.

#![cfg(not(miri))]

use std::sync::{Arc, Mutex};
use std::time::Duration;
use weft::pipeline::Pipeline;

/// The CPUs the calling thread may run on, from the kernel (`Cpus_allowed_list` of
/// /proc/thread-self/status): "1", "0-1", "0,2".
fn my_cpus() -> String {
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

/// A thread pinned to one core builds a pipeline pinned to another core of the process: the
/// build succeeds and the stage runs there.
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
    let seen = Arc::new(Mutex::new(None));
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
