#include "qccl/common/errors.h"

namespace qccl {

void rethrow_with_context(std::string_view context) {
  const std::string prefix(context);
  try {
    throw;
  } catch (const NonFiniteError& e) {  // before InvalidArgument, its base
    throw NonFiniteError(prefix + e.what());
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(prefix + e.what());
  } catch (const MismatchError& e) {
    throw MismatchError(prefix + e.what());
  } catch (const TimeoutError& e) {
    throw TimeoutError(prefix + e.what());
  } catch (const CommError& e) {
    throw CommError(prefix + e.what());
  } catch (const IoError& e) {
    throw IoError(prefix + e.what());
  } catch (const Error& e) {
    throw Error(prefix + e.what());
  }
}

}  // namespace qccl
