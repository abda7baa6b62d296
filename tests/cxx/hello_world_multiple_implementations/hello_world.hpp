// The "C++ library" of share/doc/example/hello_world_multiple_implementations: one
// implementation per target; each says which one it is.
#pragma once

#include <string>

inline std::string impl_hello_world_cpu() { return "hello world from the CPU implementation"; }
inline std::string impl_hello_world_gpu() { return "hello world from the GPU implementation"; }
