//! Static typing of expressions and conditions, constant evaluation, and lowering to bytecode.
