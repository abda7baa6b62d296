//! Messages between DDS task processes (through `gspc-property` and the task wrapper) and the
//! DDS runner's property server (`pnet-dds-run`).
