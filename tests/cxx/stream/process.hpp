// share_example_stream::process for the stream example nets: reads a data slot written by
// the producer (the test) and gives its package number and production time stamp.
//
// Slot layout: bytes 0..8 the package number (unsigned long), bytes 8..16 the time stamp
// (a high_resolution_clock count), then byte k is (number + k) mod 256 up to the slot's end;
// a slot that does not look like that throws (the transfer brought the wrong bytes).
#pragma once

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace share_example_stream {
inline std::pair<unsigned long, std::chrono::high_resolution_clock::rep> process(
    std::pair<void const*, unsigned long> data) {
  if (data.second < 16) {
    throw std::runtime_error("process: a slot of " + std::to_string(data.second) +
                             " bytes is too small");
  }
  auto const bytes = static_cast<unsigned char const*>(data.first);
  unsigned long id;
  std::chrono::high_resolution_clock::rep produced;
  std::memcpy(&id, bytes, sizeof id);
  std::memcpy(&produced, bytes + 8, sizeof produced);
  for (unsigned long k = 16; k < data.second; ++k) {
    if (bytes[k] != static_cast<unsigned char>(id + k)) {
      throw std::runtime_error("process: package " + std::to_string(id) + ": byte " +
                               std::to_string(k) + " is " + std::to_string(bytes[k]));
    }
  }
  return {id, produced};
}
}  // namespace share_example_stream
