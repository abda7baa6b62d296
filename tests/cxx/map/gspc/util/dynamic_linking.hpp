// GPI-Space's gspc::util::scoped_dlhandle, as the map example uses it: a library opened
// with dlopen for the lifetime of the object, and typed access to its symbols.
#pragma once

#include <dlfcn.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace gspc {
namespace util {
class scoped_dlhandle {
 public:
  explicit scoped_dlhandle(std::filesystem::path const& path,
                           int flags = RTLD_NOW | RTLD_LOCAL)
      : _path(path.string()), _handle(dlopen(_path.c_str(), flags)) {
    if (_handle == nullptr) {
      char const* e = dlerror();
      throw std::runtime_error("could not load " + _path + ": " +
                               (e != nullptr ? e : "unknown error"));
    }
  }
  ~scoped_dlhandle() { dlclose(_handle); }
  scoped_dlhandle(scoped_dlhandle const&) = delete;
  scoped_dlhandle& operator=(scoped_dlhandle const&) = delete;

  // The symbol `name` as a `T*` (T a function or object type).
  template <typename T>
  T* sym(std::string const& name) const {
    dlerror();
    void* s = dlsym(_handle, name.c_str());
    if (char const* e = dlerror()) {
      throw std::runtime_error("could not find " + name + " in " + _path + ": " + e);
    }
    return reinterpret_cast<T*>(s);
  }

 private:
  std::string _path;
  void* _handle;
};
}  // namespace util
}  // namespace gspc
