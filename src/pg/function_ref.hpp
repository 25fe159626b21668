// A callable passed down a call, typed: what a C API's `fn(void *arg)` pair
// does, with the argument's type checked and the call followed by reading
// it. Never kept past the call it is passed to. It holds a pointer and a
// plain function, nothing with a destructor, so it may live in a frame
// that a PostgreSQL ERROR unwinds (pg_memo.hpp's boundary rules), and a
// PG_TRY may call it.
#pragma once

#include <type_traits>

namespace pgmemo {

template <typename Signature>
class FnRef;

template <typename R, typename... Args>
class FnRef<R(Args...)> {
  public:
    // From a lambda or any other callable, which must outlive the call.
    template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FnRef>>>
    FnRef(F &&f)  // NOLINT(google-explicit-constructor): passed as an argument
        : target_(const_cast<void *>(static_cast<const void *>(&f))),
          call_([](void *target, Args... args) -> R {
              return (*static_cast<std::remove_reference_t<F> *>(target))(args...);
          }) {}

    R operator()(Args... args) const { return call_(target_, args...); }

  private:
    void *target_;
    R (*call_)(void *, Args...);
};

}  // namespace pgmemo
