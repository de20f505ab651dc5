#include "qccl/tools/units.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <iomanip>
#include <limits>
#include <sstream>

#include "qccl/common/errors.h"

namespace qccl::tools {

std::size_t parse_bytes(std::string_view text, std::string_view option) {
  auto fail = [&]() -> std::size_t {
    throw InvalidArgument((option.empty() ? "" : std::string(option) + ": ") + "'" +
                          std::string(text) +
                          "' is not a size: use a whole number of bytes, optionally with K, M or "
                          "G (powers of 1024), e.g. 4096, 64K, 16M, 1G");
  };
  std::size_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return fail();
  std::string suffix(end, text.data() + text.size());
  for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::size_t multiplier = 1;
  if (!suffix.empty()) {
    const char unit = suffix[0];
    const std::string rest = suffix.substr(1);
    if (unit == 'B' && rest.empty()) multiplier = 1;
    else if (unit == 'K') multiplier = std::size_t{1} << 10;
    else if (unit == 'M') multiplier = std::size_t{1} << 20;
    else if (unit == 'G') multiplier = std::size_t{1} << 30;
    else return fail();
    if (unit != 'B' && !(rest.empty() || rest == "B" || rest == "IB")) return fail();
  }
  if (value > std::numeric_limits<std::size_t>::max() / multiplier) return fail();
  return value * multiplier;
}

double parse_rate(std::string_view text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  double multiplier = 0;
  if (unit == "kbit") multiplier = 1e3;
  if (unit == "mbit") multiplier = 1e6;
  if (unit == "gbit") multiplier = 1e9;
  if (ec != std::errc() || end == text.data() || multiplier == 0 || !(value > 0)) {
    throw InvalidArgument("'" + std::string(text) +
                          "' is not a link rate: use a number with kbit, mbit or gbit, e.g. "
                          "100mbit, 1gbit, 10gbit");
  }
  return value * multiplier;
}

std::string format_rate(double bits_per_second) {
  char text[32];
  if (bits_per_second >= 1e9) {
    std::snprintf(text, sizeof text, "%g Gbit/s", bits_per_second / 1e9);
  } else if (bits_per_second >= 1e6) {
    std::snprintf(text, sizeof text, "%g Mbit/s", bits_per_second / 1e6);
  } else {
    std::snprintf(text, sizeof text, "%g kbit/s", bits_per_second / 1e3);
  }
  return text;
}

std::string format_bytes(std::size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + " " + units[u];
}

std::string format_gib(double bytes) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(1) << bytes / double(1 << 30) << " GiB";
  return text.str();
}

std::string format_mib(double bytes) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(0) << bytes / double(1 << 20) << " MiB";
  return text.str();
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> list;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) list.push_back(item);
  }
  return list;
}

}  // namespace qccl::tools
