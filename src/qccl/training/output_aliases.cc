#include "qccl/training/output_aliases.h"

#include <filesystem>
#include <tuple>

#include "qccl/common/errors.h"
#include "qccl/training/checkpoint_manifest.h"

namespace qccl::engines {
namespace {

namespace fs = std::filesystem;

// The path as the file system resolves it: absolute, with the symbolic
// links of its existing part followed and "." and ".." gone, without a
// trailing separator (so "D/" and "D" are one directory).
fs::path resolved(const std::string& path) {
  std::error_code error;
  auto p = fs::weakly_canonical(fs::absolute(path, error), error);
  if (error) p = fs::absolute(path, error).lexically_normal();
  if (p.has_parent_path() && p.filename().empty()) p = p.parent_path();
  return p;
}

// A device or a pipe: writes to it add up rather than replace each other.
bool is_stream(const fs::path& p) {
  std::error_code error;
  const auto status = fs::status(p, error);
  return !error && fs::exists(status) && !fs::is_regular_file(status) &&
         !fs::is_directory(status);
}

bool same_file(const fs::path& a, const fs::path& b) {
  if (a == b) return true;
  std::error_code error;
  const bool equivalent = fs::equivalent(a, b, error);  // hard links; false where either is missing
  return !error && equivalent;
}

// The entry of `dir` that `p` lies in ("latest.json", "step-4"), or "" when
// `p` is not inside `dir`.
std::string entry_inside(const fs::path& p, const fs::path& dir) {
  const auto relative = p.lexically_relative(dir);
  if (relative.empty() || relative == "." || *relative.begin() == "..") return "";
  return relative.begin()->string();
}

std::string named(const OutputPath& output) { return output.what + " '" + output.path + "'"; }

// Refuses `a` and `b` when they are one file, or when one lies where the
// other, a checkpoint directory, keeps its own files.
void check_pair(const OutputPath& a, const fs::path& a_path, const OutputPath& b,
                const fs::path& b_path) {
  if (same_file(a_path, b_path)) {
    throw InvalidArgument(named(a) + " and " + named(b) + " are the same path ('" +
                          a_path.string() + "'): one would overwrite the other; give each its own");
  }
  for (const auto& [inner, inner_path, dir, dir_path] :
       {std::tuple(&a, &a_path, &b, &b_path), std::tuple(&b, &b_path, &a, &a_path)}) {
    if (dir->kind != OutputPath::Kind::directory) continue;
    const auto entry = entry_inside(*inner_path, *dir_path);
    if (!entry.empty() && is_checkpoint_entry(entry)) {
      throw InvalidArgument(named(*inner) + " lies where " + named(*dir) + " keeps its '" + entry +
                            "', which saving a checkpoint replaces or removes; choose a path "
                            "outside it");
    }
  }
}

}  // namespace

// Every pair, once: a run has a handful of outputs (a log and a checkpoint
// directory per codec, a summary).
void check_outputs_apart(const std::vector<OutputPath>& outputs) {
  std::vector<fs::path> paths;
  for (const auto& output : outputs) paths.push_back(resolved(output.path));
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (is_stream(paths[i])) continue;
    for (std::size_t j = i + 1; j < outputs.size(); ++j) {
      if (!is_stream(paths[j])) check_pair(outputs[i], paths[i], outputs[j], paths[j]);
    }
  }
}

}  // namespace qccl::engines
