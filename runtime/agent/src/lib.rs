//! The agent. (Being written.)
