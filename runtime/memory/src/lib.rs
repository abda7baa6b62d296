//! The virtual memory layer (skeleton: being written).
