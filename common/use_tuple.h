// The completion token of coroutines that take an operation's error as a value, not as an
// exception: `auto [ec, n] = co_await read(..., kUseTuple);`.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace hvdrun {

inline constexpr auto kUseTuple = boost::asio::as_tuple(boost::asio::use_awaitable);

}  // namespace hvdrun
