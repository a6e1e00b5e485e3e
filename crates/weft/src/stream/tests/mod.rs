//! Tests of the stream algorithm over heap memory: a model-checked property test (not under
//! loom) and loom models (only under loom).
#[cfg(not(loom))]
mod bipbuf_model;
#[cfg(loom)]
mod loom_stream;
