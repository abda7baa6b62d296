//! Runs DDS topologies on the runtime (see the crate description).
