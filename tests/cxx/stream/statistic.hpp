// gspc::util::statistic as the stream example nets use it: a named running statistic of
// time differences (min, max, sum, sum of squares), and the clock it measures with.
#pragma once

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <utility>

namespace gspc {
namespace util {
class statistic {
 public:
  using rep = std::chrono::high_resolution_clock::rep;

  explicit statistic(std::string name) : _name(std::move(name)) {}

  static rep now() { return std::chrono::high_resolution_clock::now().time_since_epoch().count(); }

  void tick(rep delta) {
    double const d = static_cast<double>(delta);
    _min = std::min(_min, d);
    _max = std::max(_max, d);
    _sum += d;
    _sqsum += d * d;
  }

  double min() const { return _min; }
  double max() const { return _max; }
  double sum() const { return _sum; }
  double sqsum() const { return _sqsum; }
  std::string const& name() const { return _name; }

 private:
  std::string _name;
  double _min = std::numeric_limits<double>::max();
  double _max = std::numeric_limits<double>::lowest();
  double _sum = 0;
  double _sqsum = 0;
};
}  // namespace util
}  // namespace gspc
