print("douctl")
