// GPI-Space's stream API as the stream example nets use it (share/xml/lib/stream,
// share/doc/example/stream): a consumer marks a slot of the stream free by writing the work
// package's flag into the slot's meta byte. Implemented in libgspc.so (gspc_stream.cpp).
#pragma once

#include <utility>

namespace gspc {
namespace stream {
// Writes `flag` into the one byte of `meta` (a buffer of the slot's meta range); throws
// when the buffer is not exactly one byte.
void mark_free(char flag, std::pair<void*, unsigned long> meta);
}  // namespace stream
}  // namespace gspc
