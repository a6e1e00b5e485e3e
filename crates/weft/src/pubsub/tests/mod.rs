//! Models of the pub/sub cores over heap memory (loom only).
#[cfg(loom)]
mod loom_pool;
