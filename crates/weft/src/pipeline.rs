//! Pipelines: stages on their own named threads, linked by broadcast rings, with optional core
//! pinning, fan-out, and a clean shutdown.
//!
//! ```
//! use weft::pipeline::Pipeline;
//! let mut p = Pipeline::builder()
//!     .capacity(64)
//!     .input::<u64>()
//!     .then(|x| x * 2)
//!     .then(|x| x + 1)
//!     .build()
//!     .unwrap();
//! p.publish(20);
//! assert_eq!(p.output().recv(), Ok(41));
//! ```
//!
//! Links are lossless by default (bounded rings: a slow stage holds the earlier ones back, and
//! the input's `publish` waits); [`PipelineBuilder::lossy`] makes them lossy rings, where a
//! slow stage skips what it missed and carries on. A stage that panics is reported by
//! [`Pipeline::failure`] and the whole pipeline stops: every stage exits, the outputs see
//! `Closed`, and the input no longer waits. Dropping the pipeline stops and joins every stage.

use crate::ring::{self, PublishError, Publisher, RecvError, Ring, Subscriber};
use crate::{Error, Result};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often a waiting stage looks at the stop flag.
const POLL: Duration = Duration::from_millis(20);

/// What the stages share with the pipeline handle.
#[derive(Debug, Default)]
struct Control {
    /// Set by `Control::fail` (a stage that panicked) and by the handle's `stop_and_join`;
    /// read by every stage and by the handle's publishes. Only ever goes from false to true.
    stop: AtomicBool,
    /// The first failure, written by `Control::fail` under the lock; read by the handle.
    failure: Mutex<Option<String>>,
}

impl Control {
    fn stopped(&self) -> bool {
        // Acquire: synchronizes with the Release store in `fail`, so that whoever sees the
        // flag (a stage about to exit, whose output then reads `Closed`; the handle refusing
        // a publish) also sees the failure recorded before it.
        self.stop.load(Ordering::Acquire)
    }

    fn fail(&self, msg: String) {
        let mut f = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        f.get_or_insert(msg);
        // Release: synchronizes with the Acquire load in `stopped`, publishing the failure
        // written above. Stored under the lock, so that a `failure()` that returns the message
        // (it locks after this unlock) is followed by `stopped()` returning true.
        self.stop.store(true, Ordering::Release);
        drop(f);
    }
}

/// A stage not yet started: what it runs (given its thread name and the shared control) and
/// the stack its thread needs.
struct Job {
    run: Box<dyn FnOnce(String, Arc<Control>) + Send>,
    stack: usize,
}

/// The stack of a stage thread that receives `A` and publishes `B`. A stage holds a handful of
/// copies of its messages at once on its stack (the value received, the closure's argument
/// and result, the value handed to the publish and given back by a publish that timed out),
/// so a large message type (a 1 MiB array) overflows a default 2 MiB thread stack, which
/// aborts the whole process. The standard stack plus 16 copies of each side's message.
fn stage_stack<A, B>() -> usize {
    const BASE: usize = 2 << 20;
    BASE.saturating_add(16usize.saturating_mul(size_of::<A>().saturating_add(size_of::<B>())))
}

/// Runs one stage: receive, transform, publish, until the input closes or the pipeline stops.
fn run_stage<A: bytemuck::Pod, B: bytemuck::Pod>(
    mut rx: Subscriber<A>,
    mut tx: Publisher<B>,
    mut f: impl FnMut(A) -> B,
    name: &str,
    ctl: &Control,
) {
    while !ctl.stopped() {
        let v = match rx.recv_timeout(POLL) {
            Ok(v) => v,
            Err(RecvError::Timeout | RecvError::Empty) => continue,
            // A lossy link: the subscriber counted what was skipped; carry on.
            Err(RecvError::Lagged { .. }) => continue,
            Err(RecvError::Closed) => return,
        };
        let mut out = match catch_unwind(AssertUnwindSafe(|| f(v))) {
            Ok(out) => out,
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a non-string panic".into());
                ctl.fail(format!("stage '{name}' panicked: {what}"));
                return;
            }
        };
        loop {
            match tx.publish_timeout(out, POLL) {
                Ok(()) => break,
                // `Closed` comes only from a pipeline's own input, never from a ring.
                Err(e) => {
                    if ctl.stopped() {
                        return;
                    }
                    out = e.into_inner();
                }
            }
        }
    }
}

/// The start of a pipeline: settings that apply to every link and stage.
///
/// # Examples
/// ```
/// use weft::pipeline::Pipeline;
/// // Pinned from the first core this thread may run on (core 0 may be outside this
/// // process's set).
/// let first = weft::affinity::allowed_cores()[0];
/// let b = Pipeline::builder().capacity(1024).lossy(false).name("feed").pin_cores(first);
/// let mut p = b.input::<u32>().then(|x| x + 1).build()?;
/// p.publish(1);
/// assert_eq!(p.output().recv(), Ok(2));
/// # Ok::<(), weft::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct PipelineBuilder {
    capacity: u64,
    lossy: bool,
    pin_from: Option<usize>,
    prefix: String,
}

impl PipelineBuilder {
    /// Slots per link (default 1024; rounded up to a power of two, 2 to 2^40). A link too
    /// large for memory is an error from [`build`](Chain::build).
    pub fn capacity(mut self, slots: u64) -> Self {
        self.capacity = slots;
        self
    }

    /// Lossy links (a slow stage skips messages) instead of lossless ones (the default).
    pub fn lossy(mut self, on: bool) -> Self {
        self.lossy = on;
        self
    }

    /// Pins the stages to cores: stage 0 to core `first`, each next stage to the next core
    /// after it among `first` and the cores the building thread may run on
    /// ([`affinity::allowed_cores`](crate::affinity::allowed_cores), ascending, wrapping
    /// around). `first` may lie outside the building thread's mask (a thread pinned to core 0
    /// may build a pipeline on core 1); build from an unpinned thread to spread the stages
    /// over every core the process may use.
    ///
    /// Each stage pins itself and the kernel decides: [`build`](Chain::build) fails with
    /// [`Error::InvalidArgument`] when a stage's core is one the kernel refuses (outside this
    /// process's cpuset, or offline) or beyond the CPU set, and with the OS's error when a
    /// stage cannot pin itself otherwise.
    pub fn pin_cores(mut self, first: usize) -> Self {
        self.pin_from = Some(first);
        self
    }

    /// Names the stage threads `NAME-0`, `NAME-1`, ... (default `weft-stage`). A prefix with a
    /// NUL byte is an [`Error::InvalidName`] from [`build`](Chain::build).
    pub fn name(mut self, prefix: &str) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// A new link: a ring of `capacity` slots of `T`, or why it cannot be made (too large
    /// for `isize` or for memory).
    fn link<T: bytemuck::Pod>(&self) -> Result<(Publisher<T>, Ring<T>)> {
        if self.lossy {
            ring::channel_with::<T>(self.capacity, ring::Options::new())
        } else {
            ring::bounded_with::<T>(self.capacity, 0, ring::Options::new())
        }
    }

    /// The pipeline's input type: what [`Pipeline::publish`] takes.
    ///
    /// A link that cannot be made here or in the stages after it (capacity times the size of
    /// the message too large for `isize` or for memory) is kept and returned by
    /// [`build`](Chain::build); the stages after it make no rings.
    ///
    /// # Examples
    /// ```
    /// use weft::pipeline::Pipeline;
    /// // 2^40 slots of 1 MiB messages: more than any address space.
    /// let p = Pipeline::builder().capacity(1 << 40).input::<[u8; 1 << 20]>().build();
    /// assert!(p.is_err());
    /// ```
    pub fn input<T: bytemuck::Pod>(self) -> Chain<T, T> {
        let links = self.link::<T>();
        Chain {
            cfg: self,
            links,
            jobs: Vec::new(),
        }
    }
}

/// A pipeline being built: input type `I`, current output type `T`.
pub struct Chain<I: bytemuck::Pod, T: bytemuck::Pod> {
    cfg: PipelineBuilder,
    /// The input's publisher and the last link, or the first error met making a link.
    links: Result<(Publisher<I>, Ring<T>)>,
    jobs: Vec<Job>,
}

impl<I: bytemuck::Pod, T: bytemuck::Pod> std::fmt::Debug for Chain<I, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chain")
            .field("cfg", &self.cfg)
            .field("stages", &self.jobs.len())
            .field("error", &self.links.as_ref().err())
            .finish()
    }
}

impl<I: bytemuck::Pod, T: bytemuck::Pod> Chain<I, T> {
    /// Queues a stage running `f` on what `tail` carries; returns the stage's output link.
    fn stage<U: bytemuck::Pod>(
        cfg: &PipelineBuilder,
        tail: &Ring<T>,
        jobs: &mut Vec<Job>,
        f: impl FnMut(T) -> U + Send + 'static,
    ) -> Result<Ring<U>> {
        let (tx, ring) = cfg.link::<U>()?;
        let rx = tail.subscribe();
        jobs.push(Job {
            run: Box::new(move |name, ctl| run_stage(rx, tx, f, &name, &ctl)),
            stack: stage_stack::<T, U>(),
        });
        Ok(ring)
    }

    /// Adds a stage that maps every message with `f` on its own thread.
    pub fn then<U: bytemuck::Pod>(mut self, f: impl FnMut(T) -> U + Send + 'static) -> Chain<I, U> {
        let links = self.links.and_then(|(input, tail)| {
            let ring = Self::stage(&self.cfg, &tail, &mut self.jobs, f)?;
            Ok((input, ring))
        });
        Chain {
            cfg: self.cfg,
            links,
            jobs: self.jobs,
        }
    }

    /// Ends the pipeline with two stages that both receive every message: `f` and `g`, each on
    /// its own thread, each with its own output.
    ///
    /// # Examples
    /// ```
    /// use weft::pipeline::Pipeline;
    /// let mut p = Pipeline::builder()
    ///     .input::<u64>()
    ///     .fan_out(|x| x + 1, |x| x as f64 / 2.0)
    ///     .build()
    ///     .unwrap();
    /// p.publish(3);
    /// let (a, b) = p.output();
    /// assert_eq!((a.recv(), b.recv()), (Ok(4), Ok(1.5)));
    /// ```
    pub fn fan_out<U: bytemuck::Pod, V: bytemuck::Pod>(
        mut self,
        f: impl FnMut(T) -> U + Send + 'static,
        g: impl FnMut(T) -> V + Send + 'static,
    ) -> FanOut<I, U, V> {
        let links = self.links.and_then(|(input, tail)| {
            let a = Self::stage(&self.cfg, &tail, &mut self.jobs, f)?;
            let b = Self::stage(&self.cfg, &tail, &mut self.jobs, g)?;
            Ok((input, a, b))
        });
        FanOut {
            cfg: self.cfg,
            links,
            jobs: self.jobs,
        }
    }

    /// Starts every stage.
    ///
    /// # Errors
    /// - the first link that could not be made: [`Error::InvalidArgument`] when its size in
    ///   bytes (capacity times slot) does not fit in `isize`, `Error::Io` when the memory
    ///   cannot be allocated;
    /// - [`Error::InvalidName`] for a [`name`](PipelineBuilder::name) with a NUL byte;
    /// - [`Error::InvalidArgument`] or `Error::Io` when a stage cannot pin itself (see
    ///   [`pin_cores`](PipelineBuilder::pin_cores));
    /// - `Error::Io` when a thread cannot be spawned.
    ///
    /// The stages already started are stopped and joined before the error is returned.
    pub fn build(self) -> Result<Pipeline<I, Subscriber<T>>> {
        let (input, tail) = self.links?;
        let out = tail.subscribe();
        start(self.cfg, input, self.jobs, out)
    }
}

/// The output of a fanned-out pipeline: one subscriber per branch.
pub type Pair<U, V> = (Subscriber<U>, Subscriber<V>);

/// A pipeline that ends in two parallel stages.
pub struct FanOut<I: bytemuck::Pod, U: bytemuck::Pod, V: bytemuck::Pod> {
    cfg: PipelineBuilder,
    /// The input's publisher and the two branches' output links, or the first error met
    /// making a link.
    links: Result<(Publisher<I>, Ring<U>, Ring<V>)>,
    jobs: Vec<Job>,
}

impl<I: bytemuck::Pod, U: bytemuck::Pod, V: bytemuck::Pod> std::fmt::Debug for FanOut<I, U, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FanOut")
            .field("cfg", &self.cfg)
            .field("stages", &self.jobs.len())
            .field("error", &self.links.as_ref().err())
            .finish()
    }
}

impl<I: bytemuck::Pod, U: bytemuck::Pod, V: bytemuck::Pod> FanOut<I, U, V> {
    /// Starts every stage; the output is one subscriber per branch.
    ///
    /// # Errors
    /// As [`Chain::build`].
    pub fn build(self) -> Result<Pipeline<I, Pair<U, V>>> {
        let (input, a, b) = self.links?;
        let out = (a.subscribe(), b.subscribe());
        start(self.cfg, input, self.jobs, out)
    }
}

fn start<I: bytemuck::Pod, O>(
    cfg: PipelineBuilder,
    input: Publisher<I>,
    jobs: Vec<Job>,
    output: O,
) -> Result<Pipeline<I, O>> {
    if cfg.prefix.contains('\0') {
        return Err(Error::InvalidName {
            name: cfg.prefix,
            reason: "a thread name cannot contain a NUL byte",
        });
    }
    let ctl = Arc::new(Control::default());
    let mut p = Pipeline {
        feed: Feed {
            input: Some(input),
            stages: Vec::new(),
            ctl: ctl.clone(),
        },
        output,
    };
    let pins = cfg.pin_from.map(|first| stage_cores(first, jobs.len()));
    // Each stage reports whether it pinned itself before it runs: a failure fails `build`.
    let (pinned, pin_results) = std::sync::mpsc::channel::<Result<()>>();
    let n = jobs.len();
    for (i, job) in jobs.into_iter().enumerate() {
        let name = format!("{}-{i}", cfg.prefix);
        let ctl = ctl.clone();
        let pin = pins.as_ref().map(|cores| cores[i]);
        let pinned = pinned.clone();
        let thread_name = name.clone();
        let Job { run, stack } = job;
        let h = std::thread::Builder::new()
            .name(name.clone())
            .stack_size(stack)
            .spawn(move || {
                let r = pin.map_or(Ok(()), pin_stage);
                let ok = r.is_ok();
                let _ = pinned.send(r);
                // Reported: a stage that dies later must not keep `build`'s channel open.
                drop(pinned);
                if ok {
                    run(thread_name, ctl)
                }
            })
            .map_err(|e| Error::io("spawn", &name, e))?;
        p.feed.stages.push(h);
    }
    // Only the stages hold senders from here, each until it reports: one that dies before it
    // reports (its thread panicked) ends the channel once the others have reported, and the
    // loop below fails instead of waiting for ever.
    drop(pinned);
    for _ in 0..n {
        // Every stage sends once, first thing. On an error `p` is dropped, which stops and
        // joins the stages already running.
        pin_results.recv().map_err(|_| Error::InvalidArgument {
            what: "pipeline stage start",
            value: 0,
            expected: "every stage to report its pinning",
        })??;
    }
    Ok(p)
}

/// The core of each of `stages` stages pinned from core `first`: `first`, then the cores
/// after it among `first` and the building thread's allowed cores, ascending, wrapping
/// around. Whether a stage may run on its core is left to the kernel (`pin_stage`): the
/// building thread's mask is not the process's cpuset.
fn stage_cores(first: usize, stages: usize) -> Vec<usize> {
    let mut cores = crate::affinity::allowed_cores();
    let k = match cores.binary_search(&first) {
        Ok(k) => k,
        Err(k) => {
            cores.insert(k, first);
            k
        }
    };
    (0..stages).map(|i| cores[(k + i) % cores.len()]).collect()
}

/// Pins the calling stage thread to `core`. A core the kernel refuses (`EINVAL`: offline or
/// outside this process's cpuset) is the caller's bad argument, like one beyond the CPU set.
fn pin_stage(core: usize) -> Result<()> {
    crate::affinity::pin_current_thread(core).map_err(|e| match e {
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::InvalidInput => {
            Error::InvalidArgument {
                what: "pin_cores: a stage's core",
                value: core as u64,
                expected: "a core this process may run on (the kernel refused it)",
            }
        }
        e => e,
    })
}

/// A running pipeline: publish into its input, receive from its output. Dropping it stops
/// and joins every stage, which waits for a stage's function to return;
/// [`shutdown_timeout`](Pipeline::shutdown_timeout) bounds that wait.
///
/// # Examples
/// A panicking stage stops the pipeline and is reported:
/// ```
/// use weft::pipeline::Pipeline;
/// let mut p = Pipeline::builder()
///     .name("checked")
///     .input::<u32>()
///     .then(|x| if x == 0 { panic!("zero") } else { x })
///     .build()
///     .unwrap();
/// p.publish(0);
/// assert_eq!(p.output().recv(), Err(weft::ring::RecvError::Closed));
/// assert_eq!(p.failure().unwrap(), "stage 'checked-0' panicked: zero");
/// ```
pub struct Pipeline<I: bytemuck::Pod, O> {
    /// Dropped first: the stages stop and are joined before the output goes.
    feed: Feed<I>,
    output: O,
}

/// A pipeline's input, its stage threads and what they share with the handle. Dropping it
/// stops and joins every stage.
struct Feed<I: bytemuck::Pod> {
    input: Option<Publisher<I>>,
    stages: Vec<JoinHandle<()>>,
    ctl: Arc<Control>,
}

impl<I: bytemuck::Pod, O> std::fmt::Debug for Pipeline<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("stages", &self.feed.stages.len())
            .field("failure", &self.failure())
            .finish()
    }
}

impl Pipeline<u8, ()> {
    /// Starts building a pipeline.
    pub fn builder() -> PipelineBuilder {
        PipelineBuilder {
            capacity: 1024,
            lossy: false,
            pin_from: None,
            prefix: "weft-stage".into(),
        }
    }
}

impl<I: bytemuck::Pod, O> Pipeline<I, O> {
    /// Publishes into the pipeline's input, waiting for room on a lossless pipeline. After the
    /// input was closed, or once the pipeline stopped (a stage failed: see
    /// [`failure`](Pipeline::failure)), the value is dropped;
    /// [`publish_timeout`](Pipeline::publish_timeout) gives it back instead.
    ///
    /// Room on a lossless pipeline comes from reading its output: a thread that publishes more
    /// than the links hold before it reads waits for ever. Read the output on another thread
    /// ([`split`](Pipeline::split)), or publish with a timeout.
    pub fn publish(&mut self, value: I) {
        let Some(tx) = self.feed.input.as_mut() else {
            return;
        };
        let mut v = value;
        while !self.feed.ctl.stopped() {
            match tx.publish_timeout(v, POLL) {
                Ok(()) => return,
                Err(e) => v = e.into_inner(),
            }
        }
    }

    /// Publishes into the input, waiting at most `timeout` for room.
    ///
    /// # Errors
    /// [`PublishError::Timeout`] with the value when no room came in time;
    /// [`PublishError::Closed`] with the value, at once, when the input was closed or the
    /// pipeline stopped (a stage failed: see [`failure`](Pipeline::failure)), since nothing
    /// would ever receive it. A value accepted while a stage is failing may still be lost:
    /// `failure` tells.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use weft::pipeline::Pipeline;
    /// let mut p = Pipeline::builder().capacity(2).input::<u64>().then(|x| x).build().unwrap();
    /// // Nobody reads the output: the links fill up, then the input has no room.
    /// let mut sent = 0;
    /// while p.publish_timeout(sent, Duration::from_millis(50)).is_ok() {
    ///     sent += 1;
    /// }
    /// assert!((2..=5).contains(&sent)); // two slots per link, one message in the stage's hands
    /// p.close_input();
    /// let e = p.publish_timeout(9, Duration::from_secs(5)).unwrap_err(); // at once
    /// assert_eq!(e, weft::ring::PublishError::Closed(9));
    /// let got: Vec<u64> = std::iter::from_fn(|| p.output().recv().ok()).collect();
    /// assert_eq!(got, Vec::from_iter(0..sent)); // everything accepted comes out
    /// ```
    pub fn publish_timeout(&mut self, value: I, timeout: Duration) -> Result<(), PublishError<I>> {
        match self.feed.input.as_mut() {
            Some(tx) if !self.feed.ctl.stopped() => tx.publish_timeout(value, timeout),
            _ => Err(PublishError::Closed(value)),
        }
    }

    /// Closes the input: the stages drain what is in flight, then the outputs see `Closed`.
    ///
    /// # Examples
    /// ```
    /// use weft::pipeline::Pipeline;
    /// use weft::ring::RecvError;
    /// let mut p = Pipeline::builder().input::<u64>().then(|x| x * 10).build().unwrap();
    /// p.publish(1);
    /// p.publish(2);
    /// p.close_input();
    /// p.publish(3); // dropped: the input is closed
    /// assert_eq!(p.output().recv(), Ok(10));
    /// assert_eq!(p.output().recv(), Ok(20));
    /// assert_eq!(p.output().recv(), Err(RecvError::Closed));
    /// ```
    pub fn close_input(&mut self) {
        self.feed.input = None;
    }

    /// The output: a subscriber, or a pair of them after [`Chain::fan_out`].
    pub fn output(&mut self) -> &mut O {
        &mut self.output
    }

    /// Moves the output out, to be read on another thread while this one publishes: returns
    /// the pipeline without its output (it still publishes, reports failures, shuts down, and
    /// stops and joins its stages when dropped) and the output. Once the stages stop, the
    /// output receives what reached it, then `Closed`.
    ///
    /// # Examples
    /// A lossless pipeline fed faster than its links hold, its output read on another thread:
    /// ```
    /// use weft::pipeline::Pipeline;
    /// use weft::ring::RecvError;
    /// let p = Pipeline::builder().capacity(4).input::<u64>().then(|x| x * 2).build()?;
    /// let (mut p, mut out) = p.split();
    /// let reader = std::thread::spawn(move || {
    ///     let mut sum = 0;
    ///     loop {
    ///         match out.recv() {
    ///             Ok(v) => sum += v,
    ///             Err(RecvError::Closed) => return sum,
    ///             Err(e) => panic!("{e}"),
    ///         }
    ///     }
    /// });
    /// for i in 0..1000 {
    ///     p.publish(i); // waits for the reader to make room, never for ever
    /// }
    /// p.close_input();
    /// assert_eq!(reader.join().unwrap(), 999 * 1000);
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn split(self) -> (Pipeline<I, ()>, O) {
        let Pipeline { feed, output } = self;
        (Pipeline { feed, output: () }, output)
    }

    /// The first stage failure (a panic), if any; the pipeline has then stopped.
    pub fn failure(&self) -> Option<String> {
        self.feed
            .ctl
            .failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Stops every stage (whatever is in flight is dropped), joins them, and returns the first
    /// failure, if any.
    ///
    /// # Examples
    /// ```
    /// use weft::pipeline::Pipeline;
    /// let mut p = Pipeline::builder().input::<u32>().then(|x| x + 1).build().unwrap();
    /// p.publish(1);
    /// assert_eq!(p.output().recv(), Ok(2));
    /// assert_eq!(p.shutdown(), None); // no stage failed
    ///
    /// let mut q = Pipeline::builder()
    ///     .name("checked")
    ///     .input::<u32>()
    ///     .then(|x| if x == 0 { panic!("zero") } else { x })
    ///     .build()
    ///     .unwrap();
    /// q.publish(0);
    /// assert_eq!(q.output().recv(), Err(weft::ring::RecvError::Closed)); // the stage stopped
    /// assert_eq!(q.shutdown().as_deref(), Some("stage 'checked-0' panicked: zero"));
    /// ```
    pub fn shutdown(mut self) -> Option<String> {
        self.feed.stop_and_join();
        self.failure()
    }

    /// As [`shutdown`](Pipeline::shutdown), waiting at most `timeout` for the stages to finish.
    /// A stage stops at its next look at the stop flag, which comes once its function returns
    /// (a stage waiting for input or for room looks every 20 ms): one whose function is still
    /// running when the time is up (blocked in a call, looping) is left to finish on its own
    /// thread, which then exits without taking another message.
    ///
    /// # Errors
    /// [`Error::Timeout`] when a stage was still running at the end of `timeout`.
    ///
    /// # Examples
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    /// use weft::pipeline::Pipeline;
    /// let (stuck, release) = mpsc::channel::<()>();
    /// let release = std::sync::Mutex::new(release);
    /// let mut p = Pipeline::builder()
    ///     .input::<u32>()
    ///     .then(move |x| {
    ///         // Blocks until `stuck` sends, or is dropped.
    ///         let _ = release.lock().unwrap().recv();
    ///         x
    ///     })
    ///     .build()?;
    /// p.publish(1);
    /// std::thread::sleep(Duration::from_millis(50)); // the stage took the value and blocks
    /// let r = p.shutdown_timeout(Duration::from_millis(100));
    /// assert!(matches!(r, Err(weft::Error::Timeout)));
    /// drop(stuck); // the stage's function returns; its thread exits
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Result<Option<String>> {
        if self.feed.stop_and_join_within(timeout) {
            Ok(self.failure())
        } else {
            Err(Error::Timeout)
        }
    }
}

impl<I: bytemuck::Pod> Feed<I> {
    /// Tells every stage to stop and closes the input.
    fn stop(&mut self) {
        // Relaxed: this store publishes nothing (no failure goes with it), and the handle is
        // about to join every stage, which orders everything after it anyway.
        self.ctl.stop.store(true, Ordering::Relaxed);
        self.input = None;
    }

    fn stop_and_join(&mut self) {
        self.stop();
        for h in self.stages.drain(..) {
            // A stage's panic is caught inside it; a join error cannot carry anything more.
            let _ = h.join();
        }
    }

    /// As [`Feed::stop_and_join`], waiting at most `timeout`; `false` when a stage was still
    /// running then. The stages that were are detached (they exit once their function
    /// returns), so that dropping the feed does not wait for them after all.
    fn stop_and_join_within(&mut self, timeout: Duration) -> bool {
        self.stop();
        let deadline = Instant::now().checked_add(timeout);
        loop {
            // A thread that finished is joined at once; a join error (a panic) cannot carry
            // anything more than the failure the stage recorded.
            for h in self.stages.extract_if(.., |h| h.is_finished()) {
                let _ = h.join();
            }
            if self.stages.is_empty() {
                return true;
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                self.stages.clear();
                return false;
            }
            // Stages see the flag within `POLL` of it: a short nap, a few dozen looks at most.
            let nap = Duration::from_millis(1);
            std::thread::sleep(deadline.map_or(nap, |d| nap.min(d - now)));
        }
    }
}

impl<I: bytemuck::Pod> Drop for Feed<I> {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}
