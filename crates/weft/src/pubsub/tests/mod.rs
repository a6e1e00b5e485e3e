//! The pub/sub cores over heap memory: plain tests (also run under miri) and loom models.
#[cfg(not(loom))]
mod heap;
#[cfg(not(loom))]
mod inline_heap;
#[cfg(loom)]
mod loom_inline;
#[cfg(loom)]
mod loom_pool;
mod mem;
