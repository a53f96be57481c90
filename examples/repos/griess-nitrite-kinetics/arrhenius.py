# Arrhenius analysis of the diazotisation rate constants.
# ln k = ln A - Ea / (R T); a straight-line fit of ln k against 1/T gives the
# activation energy from the slope and the pre-exponential factor from the
# intercept.
import numpy as np
import pandas as pd

R = 8.314462618  # J mol^-1 K^-1

rates = pd.read_csv("data/rate_constants.csv")
T = rates["temperature_C"].to_numpy(float) + 273.15
k = rates["k_per_s"].to_numpy(float)

x = 1.0 / T
y = np.log(k)
(slope, intercept), cov = np.polyfit(x, y, 1, cov=True)

Ea = -slope * R
Ea_err = np.sqrt(cov[0, 0]) * R
A = np.exp(intercept)

pred = slope * x + intercept
r2 = 1 - ((y - pred) ** 2).sum() / ((y - y.mean()) ** 2).sum()

T_body = 37.0 + 273.15
k37 = A * np.exp(-Ea / (R * T_body))
half_life_37 = np.log(2) / k37

print("Arrhenius fit of Griess diazotisation kinetics")
print(f"Temperatures measured: {rates['temperature_C'].nunique()}")
print(f"Activation energy (kJ/mol): {Ea / 1000:.3f}")
print(f"Activation energy std error (kJ/mol): {Ea_err / 1000:.3f}")
print(f"Pre-exponential factor (1/s): {A:.4e}")
print(f"R squared: {r2:.5f}")
print(f"Predicted rate constant at 37 C (1/s): {k37:.4e}")
print(f"Half-life at 37 C (s): {half_life_37:.2f}")
