// The part of {fmt} (fmt/core.h) that test/many_ranges_in_memory_transfer uses:
// fmt::format with `{}` placeholders, each replaced by the next argument as std::ostream
// prints it (`{{` and `}}` are literal braces).
#pragma once

#include <sstream>
#include <string>
#include <utility>

namespace fmt {
namespace detail {
inline void format_rest(std::ostringstream& out, char const* s) {
  for (; *s != '\0'; ++s) {
    if ((s[0] == '{' && s[1] == '{') || (s[0] == '}' && s[1] == '}')) {
      ++s;
    }
    out << *s;
  }
}

template <typename T, typename... Rest>
void format_rest(std::ostringstream& out, char const* s, T const& x, Rest const&... rest) {
  for (; *s != '\0'; ++s) {
    if ((s[0] == '{' && s[1] == '{') || (s[0] == '}' && s[1] == '}')) {
      ++s;
      out << *s;
    } else if (s[0] == '{' && s[1] == '}') {
      out << x;
      format_rest(out, s + 2, rest...);
      return;
    } else {
      out << *s;
    }
  }
}
}  // namespace detail

template <typename... Args>
std::string format(char const* s, Args const&... args) {
  std::ostringstream out;
  detail::format_rest(out, s, args...);
  return out.str();
}
}  // namespace fmt
