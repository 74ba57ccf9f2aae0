// check::one_of: a string argument with a fixed set of values (a loss's
// reduction, an initializer's mode or nonlinearity), refused with the values it
// may take and the closest one. Compiled into opforge._C and opforge._cuda_sim.
#include <opforge/core/checks.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

namespace opforge::check {
namespace {

// Levenshtein distance, for the "did you mean" hint.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

void one_of(const char* op, const char* arg, std::string_view value, std::initializer_list<const char*> choices) {
  std::ostringstream known;
  const char* closest = nullptr;
  size_t best = std::string_view::npos;
  for (const char* c : choices) {
    if (value == c) {
      return;
    }
    known << (known.tellp() > 0 ? ", " : "") << "'" << c << "'";
    const size_t d = edit_distance(value, c);
    if (d < best) {
      best = d;
      closest = c;
    }
  }
  std::string hint;
  if (closest != nullptr && best <= std::max<size_t>(2, value.size() / 3)) {
    hint = std::string("; did you mean '") + closest + "'?";
  }
  TORCH_CHECK_VALUE(false, op, ": ", arg, " must be one of ", known.str(), ", got '", value, "'", hint);
}

}  // namespace opforge::check
