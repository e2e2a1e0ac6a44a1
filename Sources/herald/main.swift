print("herald")
