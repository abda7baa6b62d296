//! Launchers: local, ssh, slurm. (Being written.)
