//! Workload descriptions: parse them and lower them to xpnet nets.
