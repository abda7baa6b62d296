//! Text forms of the IR (`--emit=ir`) and of the bytecode (`--emit=bytecode`).
