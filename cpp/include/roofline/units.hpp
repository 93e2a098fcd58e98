#pragma once
/// SI prefixes used only at the edges (loading data, display); everything inside is base SI.
namespace roofline::units {

inline constexpr double kilo = 1e3;   ///< 10^3
inline constexpr double mega = 1e6;   ///< 10^6
inline constexpr double giga = 1e9;   ///< 10^9
inline constexpr double tera = 1e12;  ///< 10^12
inline constexpr double micro = 1e-6; ///< 10^-6

}  // namespace roofline::units
