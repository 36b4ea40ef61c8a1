#!/usr/bin/python3
"""Writes the example CSVs of examples/tabular/ (deterministic; stdlib only).

  trips.csv  taxi trips (the Ray AIR taxi-tip example's kind of data): numeric
             and categorical columns, a few missing cells; label tip_paid (0/1).
  churn.csv  telecom customers: categorical contract/internet/payment columns,
             label churn (yes/no).

Both labels follow a fixed logistic model of the columns plus noise, so a
model can learn them but not perfectly. Run: python3 make_data.py [DIR [ROWS]]
(the shipped files: 4,000 rows each; bench/run tabular writes larger ones).
"""
import csv
import math
import os
import random
import sys


def sigmoid(z):
    return 1.0 / (1.0 + math.exp(-z))


def trips(path, n, rng):
    payments = ["card", "cash", "mobile", "dispute"]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["passenger_count", "trip_distance", "fare_amount", "trip_minutes", "hour",
                    "payment_type", "vendor", "tip_paid"])
        for _ in range(n):
            distance = rng.lognormvariate(0.8, 0.7)
            minutes = max(2.0, distance * rng.uniform(2.5, 5.0) + rng.gauss(3, 2))
            fare = 3.0 + 2.5 * distance + 0.4 * minutes + rng.gauss(0, 1.5)
            hour = rng.randrange(24)
            payment = rng.choices(payments, weights=[60, 30, 8, 2])[0]
            vendor = rng.choice(["A", "B"])
            passengers = rng.choices([1, 2, 3, 4, 5, 6], weights=[60, 20, 8, 6, 4, 2])[0]
            z = (-1.2 + {"card": 2.2, "cash": -1.5, "mobile": 1.4, "dispute": -3.0}[payment]
                 + 0.08 * distance - 0.02 * (fare - 15) + (0.5 if hour >= 20 or hour < 4 else 0.0)
                 + (0.3 if vendor == "B" else 0.0) + rng.gauss(0, 0.8))
            tip = 1 if rng.random() < sigmoid(z) else 0
            row = [passengers, round(distance, 2), round(fare, 2), round(minutes, 1), hour, payment, vendor, tip]
            if rng.random() < 0.02:
                row[1] = ""  # a missing trip_distance: the sweeps impute it
            w.writerow(row)


def churn(path, n, rng):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["tenure_months", "monthly_charges", "contract", "internet", "payment_method",
                    "senior", "support_calls", "churn"])
        for _ in range(n):
            contract = rng.choices(["month-to-month", "one year", "two year"], weights=[55, 25, 20])[0]
            internet = rng.choices(["dsl", "fiber", "none"], weights=[35, 45, 20])[0]
            payment = rng.choice(["electronic check", "mailed check", "bank transfer", "credit card"])
            tenure = rng.randrange(1, 73)
            charges = {"dsl": 50, "fiber": 85, "none": 22}[internet] + rng.gauss(0, 10)
            senior = 1 if rng.random() < 0.16 else 0
            calls = min(9, int(rng.expovariate(0.7)))
            z = (-0.8 + {"month-to-month": 1.3, "one year": -0.6, "two year": -1.8}[contract]
                 + {"dsl": -0.2, "fiber": 0.7, "none": -0.9}[internet]
                 + (0.6 if payment == "electronic check" else 0.0) - 0.035 * tenure
                 + 0.01 * (charges - 60) + 0.4 * senior + 0.35 * calls + rng.gauss(0, 0.6))
            label = "yes" if rng.random() < sigmoid(z) else "no"
            w.writerow([tenure, round(charges, 2), contract, internet, payment, senior, calls, label])


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 4000
    trips(os.path.join(out, "trips.csv"), rows, random.Random(2026))
    churn(os.path.join(out, "churn.csv"), rows, random.Random(7))
