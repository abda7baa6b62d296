//! The native module SDK. (Being written.)
