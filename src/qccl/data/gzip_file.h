// Reading gzip-compressed (or plain) files for the dataset readers, as a
// stream whose reads are bounded: the file must be a regular file
// (readable_file.h), and no more can come out of it than deflate's
// largest expansion of its size allows, so neither a FIFO nor a link to
// /dev/zero nor a header that declares absurd sizes can hang a run or
// exhaust its memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace qccl::data {

class GzipReader {
 public:
  // Opens `path`; InvalidArgument naming it (with `missing_hint` when it
  // does not exist) as ReadableFile does.
  GzipReader(const std::string& path, const std::string& missing_hint);
  ~GzipReader();
  GzipReader(const GzipReader&) = delete;
  GzipReader& operator=(const GzipReader&) = delete;

  // The most bytes the file can decompress to: deflate expands at most
  // 1032:1, and a plain file is its own size.
  std::uint64_t max_decompressed_bytes() const { return max_bytes_; }
  // Exactly `count` decompressed bytes; InvalidArgument naming the file
  // when it ends first (`what` says what was expected) or is not valid
  // gzip.
  std::vector<unsigned char> read_exact(std::size_t count, const std::string& what);
  // Whether the stream has no more bytes.
  bool at_end();

 private:
  struct Handle;
  std::string path_;
  std::unique_ptr<Handle> handle_;
  std::uint64_t max_bytes_ = 0;
};

}  // namespace qccl::data
