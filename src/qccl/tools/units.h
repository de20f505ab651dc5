// Values on the command line — byte sizes ("1K", "16M", "1G": binary
// units), link rates, comma-separated lists — and sizes in reports.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace qccl::tools {

// Parses a non-negative integer with an optional K, M or G suffix (powers of
// 1024, case-insensitive, optionally followed by "B" or "iB"). Throws
// InvalidArgument naming the text, and `option` where given, otherwise.
std::size_t parse_bytes(std::string_view text, std::string_view option = {});

// A link rate in bits per second: a number with kbit, mbit or gbit (powers
// of 1000, as tc writes them), e.g. 100mbit, 1gbit, 2.5gbit. Throws
// InvalidArgument naming the text otherwise.
double parse_rate(std::string_view text);
// "1 Gbit/s", "100 Mbit/s".
std::string format_rate(double bits_per_second);

// "64 MiB", "1 KiB", "100 B": for headers and messages.
std::string format_bytes(std::size_t bytes);
// Approximate amounts, for messages about memory: "22.7 GiB", "56 MiB".
std::string format_gib(double bytes);
std::string format_mib(double bytes);

// "a,b,,c" -> {"a", "b", "c"}: an option's comma-separated items.
std::vector<std::string> split_list(const std::string& text);

}  // namespace qccl::tools
