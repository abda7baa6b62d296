//! The worker. (Being written.)
