from lakectl.app import main

main()
