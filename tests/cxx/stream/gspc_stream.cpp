// libgspc.so for the stream tests: gspc::stream::mark_free (see gspc/drts/stream.hpp).

#include <gspc/drts/stream.hpp>

#include <stdexcept>
#include <string>

namespace gspc {
namespace stream {
void mark_free(char flag, std::pair<void*, unsigned long> meta) {
  if (meta.second != 1) {
    throw std::runtime_error("mark_free: the meta range has " + std::to_string(meta.second) +
                             " bytes, not 1");
  }
  *static_cast<char*>(meta.first) = flag;
}
}  // namespace stream
}  // namespace gspc
