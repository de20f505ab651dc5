// The lock a run holds on its checkpoint directory for its whole life, so
// that a second run started on the same directory is refused at its start
// instead of both running and one replacing the other's checkpoints.
//
// Rank 0 takes an advisory lock (flock) on DIR/.lock and writes its process
// id and host name into the file. The lock belongs to the open file: it
// goes when the run ends, fails or its process dies, so a lock file left
// behind by a dead process blocks nothing; the file's text only names the
// holder in the message. Taking the lock never waits: a lock held by
// another run is refused at once. Every rank learns the outcome
// (rank_agreement.h) and refuses alike.
#pragma once

#include <string>

#include "qccl/collectives/communicator.h"

namespace qccl::engines {

class CheckpointLock {
 public:
  // Locks `dir` (nothing for an empty `dir`: a run without checkpoints).
  // Every rank calls it. Throws InvalidArgument on every rank when another
  // run holds the lock, naming its process id and host, or when the lock
  // file cannot be opened or locked, naming the file and the cause.
  CheckpointLock(Communicator& comm, const std::string& dir);

 private:
  // Rank 0's open, locked DIR/.lock: closing it releases the lock (also
  // when the constructor throws after taking it).
  struct LockedFile {
    int fd = -1;
    LockedFile() = default;
    LockedFile(const LockedFile&) = delete;
    LockedFile& operator=(const LockedFile&) = delete;
    ~LockedFile();
  };
  LockedFile file_;
};

}  // namespace qccl::engines
