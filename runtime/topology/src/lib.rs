//! Worker topologies: parsing GPI-Space's worker description string and nodefiles, and
//! expanding them into a placement plan. (Being written.)
