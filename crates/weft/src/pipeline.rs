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
use std::time::Duration;

/// How often a waiting stage looks at the stop flag.
const POLL: Duration = Duration::from_millis(20);

/// What the stages share with the pipeline handle.
#[derive(Debug, Default)]
struct Control {
    /// Set by `Control::fail` (a stage that panicked) and by the handle's `stop_and_join`;
    /// read by every stage.
    stop: AtomicBool,
    /// The first failure, written by `Control::fail` under the lock; read by the handle.
    failure: Mutex<Option<String>>,
}

impl Control {
    fn stopped(&self) -> bool {
        // Relaxed: a flag polled in a loop; nothing else is published through it.
        self.stop.load(Ordering::Relaxed)
    }

    fn fail(&self, msg: String) {
        let mut f = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        f.get_or_insert(msg);
        // Relaxed: as above; the failure text travels under its own lock.
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A stage not yet started: it receives its thread name and the shared control.
type Job = Box<dyn FnOnce(String, Arc<Control>) + Send>;

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
                Err(PublishError::Full(v) | PublishError::Timeout(v)) => {
                    if ctl.stopped() {
                        return;
                    }
                    out = v;
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
/// let b = Pipeline::builder().capacity(1024).lossy(false).name("feed").pin_cores(0);
/// let mut p = b.input::<u32>().then(|x| x + 1).build().unwrap();
/// p.publish(1);
/// assert_eq!(p.output().recv(), Ok(2));
/// ```
#[derive(Debug, Clone)]
pub struct PipelineBuilder {
    capacity: u64,
    lossy: bool,
    pin_from: Option<usize>,
    prefix: String,
}

impl PipelineBuilder {
    /// Slots per link (default 1024).
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
    /// this process may run on ([`affinity::allowed_cores`](crate::affinity::allowed_cores),
    /// ascending, wrapping around). [`build`](Chain::build) fails with
    /// [`Error::InvalidArgument`] when `first` is not one of those cores, and with the OS's
    /// error when a stage cannot pin itself.
    pub fn pin_cores(mut self, first: usize) -> Self {
        self.pin_from = Some(first);
        self
    }

    /// Names the stage threads `NAME-0`, `NAME-1`, ... (default `weft-stage`).
    pub fn name(mut self, prefix: &str) -> Self {
        self.prefix = prefix.into();
        self
    }

    fn link<T: bytemuck::Pod>(&self) -> (Publisher<T>, Ring<T>) {
        if self.lossy {
            ring::channel::<T>(self.capacity)
        } else {
            ring::bounded::<T>(self.capacity, 0)
        }
    }

    /// The pipeline's input type: what [`Pipeline::publish`] takes.
    pub fn input<T: bytemuck::Pod>(self) -> Chain<T, T> {
        let (input, tail) = self.link::<T>();
        Chain {
            cfg: self,
            input,
            tail,
            jobs: Vec::new(),
        }
    }
}

/// A pipeline being built: input type `I`, current output type `T`.
pub struct Chain<I: bytemuck::Pod, T: bytemuck::Pod> {
    cfg: PipelineBuilder,
    input: Publisher<I>,
    tail: Ring<T>,
    jobs: Vec<Job>,
}

impl<I: bytemuck::Pod, T: bytemuck::Pod> std::fmt::Debug for Chain<I, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chain")
            .field("cfg", &self.cfg)
            .field("stages", &self.jobs.len())
            .finish()
    }
}

impl<I: bytemuck::Pod, T: bytemuck::Pod> Chain<I, T> {
    fn stage<U: bytemuck::Pod>(&mut self, f: impl FnMut(T) -> U + Send + 'static) -> Ring<U> {
        let rx = self.tail.subscribe();
        let (tx, ring) = self.cfg.link::<U>();
        self.jobs
            .push(Box::new(move |name, ctl| run_stage(rx, tx, f, &name, &ctl)));
        ring
    }

    /// Adds a stage that maps every message with `f` on its own thread.
    pub fn then<U: bytemuck::Pod>(mut self, f: impl FnMut(T) -> U + Send + 'static) -> Chain<I, U> {
        let tail = self.stage(f);
        Chain {
            cfg: self.cfg,
            input: self.input,
            tail,
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
        let a = self.stage(f);
        let b = self.stage(g);
        FanOut {
            cfg: self.cfg,
            input: self.input,
            jobs: self.jobs,
            a,
            b,
        }
    }

    /// Starts every stage.
    ///
    /// # Errors
    /// `Error::Io` when a thread cannot be spawned (the stages already started are stopped).
    pub fn build(self) -> Result<Pipeline<I, Subscriber<T>>> {
        let out = self.tail.subscribe();
        start(self.cfg, self.input, self.jobs, out)
    }
}

/// The output of a fanned-out pipeline: one subscriber per branch.
pub type Pair<U, V> = (Subscriber<U>, Subscriber<V>);

/// A pipeline that ends in two parallel stages.
pub struct FanOut<I: bytemuck::Pod, U: bytemuck::Pod, V: bytemuck::Pod> {
    cfg: PipelineBuilder,
    input: Publisher<I>,
    jobs: Vec<Job>,
    a: Ring<U>,
    b: Ring<V>,
}

impl<I: bytemuck::Pod, U: bytemuck::Pod, V: bytemuck::Pod> std::fmt::Debug for FanOut<I, U, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FanOut")
            .field("cfg", &self.cfg)
            .field("stages", &self.jobs.len())
            .finish()
    }
}

impl<I: bytemuck::Pod, U: bytemuck::Pod, V: bytemuck::Pod> FanOut<I, U, V> {
    /// Starts every stage; the output is one subscriber per branch.
    ///
    /// # Errors
    /// As [`Chain::build`].
    pub fn build(self) -> Result<Pipeline<I, Pair<U, V>>> {
        let out = (self.a.subscribe(), self.b.subscribe());
        start(self.cfg, self.input, self.jobs, out)
    }
}

fn start<I: bytemuck::Pod, O>(
    cfg: PipelineBuilder,
    input: Publisher<I>,
    jobs: Vec<Job>,
    output: O,
) -> Result<Pipeline<I, O>> {
    let ctl = Arc::new(Control::default());
    let mut p = Pipeline {
        input: Some(input),
        output,
        stages: Vec::new(),
        ctl: ctl.clone(),
    };
    let pins = match cfg.pin_from {
        Some(first) => Some(stage_cores(first, jobs.len())?),
        None => None,
    };
    // Each stage reports whether it pinned itself before it runs: a failure fails `build`.
    let (pinned, pin_results) = std::sync::mpsc::channel::<Result<()>>();
    let n = jobs.len();
    for (i, job) in jobs.into_iter().enumerate() {
        let name = format!("{}-{i}", cfg.prefix);
        let ctl = ctl.clone();
        let pin = pins.as_ref().map(|cores| cores[i]);
        let pinned = pinned.clone();
        let thread_name = name.clone();
        let h = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || {
                let r = pin.map_or(Ok(()), crate::affinity::pin_current_thread);
                let ok = r.is_ok();
                let _ = pinned.send(r);
                // Reported: a stage that dies later must not keep `build`'s channel open.
                drop(pinned);
                if ok {
                    job(thread_name, ctl)
                }
            })
            .map_err(|e| Error::io("spawn", &name, e))?;
        p.stages.push(h);
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

/// The core of each of `stages` stages pinned from core `first`: the allowed cores in
/// ascending order, starting at `first` and wrapping around.
fn stage_cores(first: usize, stages: usize) -> Result<Vec<usize>> {
    let allowed = crate::affinity::allowed_cores();
    let k = allowed
        .iter()
        .position(|&c| c == first)
        .ok_or(Error::InvalidArgument {
            what: "pin_cores: first core",
            value: first as u64,
            expected: "a core this process may run on (affinity::allowed_cores)",
        })?;
    Ok((0..stages)
        .map(|i| allowed[(k + i) % allowed.len()])
        .collect())
}

/// A running pipeline: publish into its input, receive from its output. Dropping it stops
/// and joins every stage.
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
    input: Option<Publisher<I>>,
    output: O,
    stages: Vec<JoinHandle<()>>,
    ctl: Arc<Control>,
}

impl<I: bytemuck::Pod, O> std::fmt::Debug for Pipeline<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("stages", &self.stages.len())
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
    /// input was closed, or once the pipeline stopped, the value is dropped.
    pub fn publish(&mut self, value: I) {
        let Some(tx) = self.input.as_mut() else {
            return;
        };
        let mut v = value;
        while let Err(e) = tx.publish_timeout(v, POLL) {
            if self.ctl.stopped() {
                return;
            }
            v = e.into_inner();
        }
    }

    /// Publishes into the input, waiting at most `timeout` for room.
    ///
    /// # Errors
    /// [`PublishError::Timeout`] with the value; also when the input was closed.
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
    /// let e = p.publish_timeout(9, Duration::from_millis(1)).unwrap_err();
    /// assert_eq!(e.into_inner(), 9);
    /// let got: Vec<u64> = std::iter::from_fn(|| p.output().recv().ok()).collect();
    /// assert_eq!(got, Vec::from_iter(0..sent)); // everything accepted comes out
    /// ```
    pub fn publish_timeout(&mut self, value: I, timeout: Duration) -> Result<(), PublishError<I>> {
        match self.input.as_mut() {
            Some(tx) => tx.publish_timeout(value, timeout),
            None => Err(PublishError::Timeout(value)),
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
        self.input = None;
    }

    /// The output: a subscriber, or a pair of them after [`Chain::fan_out`].
    pub fn output(&mut self) -> &mut O {
        &mut self.output
    }

    /// The first stage failure (a panic), if any; the pipeline has then stopped.
    pub fn failure(&self) -> Option<String> {
        self.ctl
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
        self.stop_and_join();
        self.failure()
    }

    fn stop_and_join(&mut self) {
        // Relaxed: a polled flag (see `Control::stopped`).
        self.ctl.stop.store(true, Ordering::Relaxed);
        self.input = None;
        for h in self.stages.drain(..) {
            // A stage's panic is caught inside it; a join error cannot carry anything more.
            let _ = h.join();
        }
    }
}

impl<I: bytemuck::Pod, O> Drop for Pipeline<I, O> {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}
