// A small implementation of map/interface.hpp, built into a shared library by the test
// (`c++ -shared -fPIC -I<this folder> -I<pnet_cxx.hpp's folder>`).
//
// - produce: byte i of block b is (b * 7 + i * 3 + 1) mod 256;
// - process: every byte XOR 0x5a;
// - consume: writes `<size> <FNV-1a 64 of the bytes, 16 hex digits>` to the file
//   `<user_data>/block-<b>.sum` (user_data holds the folder's path).

#include <interface.hpp>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

extern "C" void map_produce(::gspc::pnet::type::bytearray::type const&,
                            std::pair<void*, unsigned long> const& data,
                            unsigned long block) {
  auto p = static_cast<unsigned char*>(data.first);
  for (unsigned long i = 0; i < data.second; ++i) {
    p[i] = static_cast<unsigned char>(block * 7 + i * 3 + 1);
  }
}

extern "C" void map_process(::gspc::pnet::type::bytearray::type const&,
                            std::pair<void const*, unsigned long> const& input,
                            std::pair<void*, unsigned long> const& output) {
  if (input.second != output.second) {
    throw std::runtime_error("map_process: input and output slots differ in size");
  }
  auto in = static_cast<unsigned char const*>(input.first);
  auto out = static_cast<unsigned char*>(output.first);
  for (unsigned long i = 0; i < input.second; ++i) {
    out[i] = in[i] ^ 0x5a;
  }
}

extern "C" void map_consume(::gspc::pnet::type::bytearray::type const& user_data,
                            std::pair<void const*, unsigned long> const& data,
                            unsigned long block) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  auto p = static_cast<unsigned char const*>(data.first);
  for (unsigned long i = 0; i < data.second; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  std::string const dir(user_data.bytes.begin(), user_data.bytes.end());
  std::string const path = dir + "/block-" + std::to_string(block) + ".sum";
  std::ofstream f(path);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  f << data.second << ' ' << hex << '\n';
  if (!f) {
    throw std::runtime_error("map_consume: cannot write " + path);
  }
}
