print("this script must never run")
