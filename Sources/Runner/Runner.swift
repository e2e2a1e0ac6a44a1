// Runner
